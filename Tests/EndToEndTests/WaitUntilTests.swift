import SiteHarness
import Synchronization
import Testing

/// The harness's wait: its bound counts the time the test could run, not the time it was held up.
@Suite struct WaitUntilTests {
    /// A clock that moves only when slept on or told to: a sleep takes what it asks for, plus
    /// `stall(_:)` for the sleeps the test picks.
    final class ScriptedClock: Clock, Sendable {
        struct Instant: InstantProtocol {
            var offset: Duration
            func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
            func duration(to other: Instant) -> Duration { other.offset - offset }
            static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
        }

        private let state = Mutex<(now: Duration, sleeps: Int)>((.zero, 0))
        private let stall: @Sendable (Int) -> Duration

        /// `stall(n)`: how much longer than asked the `n`th sleep (from 1) takes.
        init(stall: @escaping @Sendable (Int) -> Duration = { _ in .zero }) { self.stall = stall }

        var now: Instant { Instant(offset: state.withLock { $0.now }) }
        var minimumResolution: Duration { .nanoseconds(1) }
        var elapsed: Duration { state.withLock { $0.now } }

        func advance(by duration: Duration) { state.withLock { $0.now += duration } }

        func sleep(until deadline: Instant, tolerance: Duration?) async throws {
            state.withLock { state in
                state.sleeps += 1
                state.now = max(state.now, deadline.offset) + stall(state.sleeps)
            }
        }
    }

    @Test("A stall longer than the timeout while the wait sleeps does not end the wait")
    func aStallDoesNotCount() async throws {
        let clock = ScriptedClock { $0 == 1 ? .seconds(6) : .zero }
        let looks = Mutex(0)
        try await Network.waitUntil("the third look", timeout: .seconds(1), clock: clock) {
            looks.withLock { looks in
                looks += 1
                return looks == 3
            }
        }
        #expect(looks.withLock { $0 } == 3)
        #expect(clock.elapsed > .seconds(6))
    }

    @Test("Without stalls the wait ends at its timeout, with a last look when the time is up")
    func theTimeoutHolds() async throws {
        let clock = ScriptedClock()
        await #expect(throws: (any Error).self) {
            try await Network.waitUntil("never", timeout: .seconds(1), clock: clock) { false }
        }
        #expect(clock.elapsed >= .seconds(1) && clock.elapsed <= .milliseconds(1_020))
        // A condition that comes true as the time runs out is seen by the last look.
        let late = ScriptedClock()
        try await Network.waitUntil("the end of the second", timeout: .seconds(1), clock: late) { late.elapsed >= .seconds(1) }
    }

    @Test("The time a condition takes to look always counts")
    func aSlowConditionCounts() async throws {
        let clock = ScriptedClock()
        let looks = Mutex(0)
        await #expect(throws: (any Error).self) {
            try await Network.waitUntil("never", timeout: .seconds(1), clock: clock) {
                looks.withLock { $0 += 1 }
                clock.advance(by: .milliseconds(400))
                return false
            }
        }
        #expect(looks.withLock { $0 } == 3)
    }

    @Test("A wait held up at every sleep still ends, at four times its timeout and 30 s")
    func aWaitAlwaysHeldUpEnds() async throws {
        let clock = ScriptedClock { _ in .seconds(1) }
        await #expect(throws: (any Error).self) {
            try await Network.waitUntil("never", timeout: .seconds(1), clock: clock) { false }
        }
        #expect(clock.elapsed >= .seconds(34) && clock.elapsed < .milliseconds(35_100))
    }
}
