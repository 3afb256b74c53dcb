/// Exponential backoff with jitter for reconnects.
///
/// Attempt `n` waits `min(maximum, initial × 2ⁿ)` scaled by a random factor in `[1 − jitter, 1]`,
/// so that a thousand locks that lost the broker together do not all come back in the same millisecond.
public struct Backoff: Sendable, Equatable {
    public var initial: Duration
    public var maximum: Duration
    /// The fraction (0…1) of each delay that is randomized.
    public var jitter: Double

    public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(5), jitter: Double = 0.5) {
        precondition(initial > .zero && maximum >= initial && (0...1).contains(jitter))
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
    }

    /// The delay before reconnect attempt `attempt` (0-based); `random` returns a value in `0..<1`.
    public func delay(attempt: Int, random: () -> Double = { Double.random(in: 0..<1) }) -> Duration {
        let growth = Double(1 << min(max(attempt, 0), 30))
        let ceiling = min(maximum / .seconds(1), (initial / .seconds(1)) * growth)
        let scaled = ceiling * (1 - jitter * random())
        return .nanoseconds(Int64(scaled * 1e9))
    }
}
