/// What a lock counts, for tests, the benchmark and a technician's `stats`.
public struct LockCounters: Sendable, Equatable, Codable {
    /// Times the relay opened.
    public var openings = 0
    /// `respond` (or `confirm`) messages refused.
    public var denials = 0
    /// Commands dropped because they were malformed or oversized.
    public var malformed = 0
    /// Challenges issued.
    public var challenges = 0

    public init() {}

    public static func + (lhs: LockCounters, rhs: LockCounters) -> LockCounters {
        var sum = lhs
        sum.openings += rhs.openings
        sum.denials += rhs.denials
        sum.malformed += rhs.malformed
        sum.challenges += rhs.challenges
        return sum
    }
}
