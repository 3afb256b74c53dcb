import Synchronization

/// Latencies of one measurement, with the percentiles the report prints.
struct Samples: Sendable {
    private(set) var values: [Duration] = []

    mutating func add(_ value: Duration) { values.append(value) }
    mutating func add(_ other: Samples) { values += other.values }

    /// How long each of `count` calls of `body`, one after another, took.
    static func timing(_ count: Int, _ body: () async throws -> Void) async rethrows -> Samples {
        var samples = Samples()
        for _ in 0..<count {
            let start = ContinuousClock.now
            try await body()
            samples.add(start.duration(to: .now))
        }
        return samples
    }

    var count: Int { values.count }

    /// The `p`-th percentile (0…100), nearest rank.
    func percentile(_ p: Double) -> Duration {
        guard !values.isEmpty else { return .zero }
        let sorted = values.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return sorted[Swift.min(Swift.max(rank, 0), sorted.count - 1)]
    }

    var p50: Duration { percentile(50) }
    var p90: Duration { percentile(90) }
    var p99: Duration { percentile(99) }
    var max: Duration { values.max() ?? .zero }

    /// Sorted values in milliseconds, thinned to at most `points`, for the plot.
    func cdf(points: Int = 400) -> [(ms: Double, fraction: Double)] {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return [] }
        let step = Swift.max(1, sorted.count / points)
        return stride(from: 0, to: sorted.count, by: step).map { (sorted[$0].milliseconds, Double($0 + 1) / Double(sorted.count)) }
            + [(sorted.last!.milliseconds, 1)]
    }
}

extension Duration {
    var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
    var seconds: Double { milliseconds / 1000 }
}

/// A counter shared by concurrent tasks.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    @discardableResult func add(_ amount: Int = 1) -> Int { value.add(amount, ordering: .relaxed).newValue }
    var current: Int { value.load(ordering: .relaxed) }
}
