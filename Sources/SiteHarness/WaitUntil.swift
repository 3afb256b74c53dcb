/// Waiting for a condition in a test, with a bound that counts the time the test could run.
extension Network {
    /// How often ``waitUntil(_:timeout:_:)`` looks at its condition.
    static let pollInterval: Duration = .milliseconds(20)
    /// A poll's sleep that ends later than this is taken for a time the process could not run.
    static let stallThreshold: Duration = .milliseconds(100)

    /// Polls `condition` every 20 ms until it holds, or throws once it has had `timeout` to come true.
    ///
    /// Time in which the process could not run does not count. Every suite starts at once, and the
    /// CPU-bound tests among them then hold both of Swift's threads: sleeps of 20 ms ended 2 to 5 s
    /// late in the suite's first seconds on two cores. A wait that counted that time failed a
    /// condition that had had no chance to come true. So a poll whose sleep ends more than 100 ms late
    /// counts as one poll interval, and the condition is looked at once more when the time is up. Time
    /// spent in the condition itself always counts (a stall inside it too), and the wait stops once
    /// four times `timeout` and 30 s have passed, after one more look.
    public static func waitUntil(_ what: String, timeout: Duration = .seconds(10), _ condition: () async throws -> Bool) async throws {
        try await waitUntil(what, timeout: timeout, clock: ContinuousClock(), condition)
    }

    /// ``waitUntil(_:timeout:_:)`` on `clock`, which its tests replace.
    public static func waitUntil<C: Clock<Duration>>(
        _ what: String, timeout: Duration, clock: C, _ condition: () async throws -> Bool
    ) async throws {
        let hardDeadline = clock.now.advanced(by: timeout * 4 + .seconds(30))
        var left = timeout
        while true {
            let checking = clock.now
            if try await condition() { return }
            let asleep = clock.now
            left -= checking.duration(to: asleep)
            guard left > .zero, asleep < hardDeadline else { break }
            try await clock.sleep(for: pollInterval)
            let slept = asleep.duration(to: clock.now)
            left -= slept > pollInterval + stallThreshold ? pollInterval : slept
        }
        throw HarnessError("timed out after \(timeout) waiting for \(what)")
    }
}
