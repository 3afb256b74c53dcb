import Logging
import Synchronization
import Testing

@testable import MQTT

@Suite struct TimerHeapTests {
    @Test func popsDueActionsInDeadlineOrderAndKeepsTheRest() {
        let order = Mutex<[Int]>([])
        var heap = TimerHeap()
        let start = ContinuousClock.now
        for (index, offset) in [5, 1, 3, 1, 9, 2].enumerated() {
            heap.insert(start + .milliseconds(offset)) { order.withLock { $0.append(index) } }
        }
        for action in heap.popDue(start + .milliseconds(3)) { action() }
        // Deadlines 1, 1 (in the order scheduled), 2, 3.
        #expect(order.withLock { $0 } == [1, 3, 5, 2])
        #expect(heap.earliest == start + .milliseconds(5))
        for action in heap.popDue(start + .seconds(1)) { action() }
        #expect(order.withLock { $0 } == [1, 3, 5, 2, 0, 4])
        #expect(heap.isEmpty)
    }

    /// Timers in deadline order take the run, the others the heap; together they still fire in
    /// deadline order, ties in the order scheduled, across many rounds of taking some and adding more.
    @Test func mixedOrderTimersFireInDeadlineOrder() {
        var generator = SystemRandomNumberGenerator()
        let fired = Mutex<[Int]>([])
        var heap = TimerHeap()
        var expected: [(deadline: Int, index: Int)] = []
        let start = ContinuousClock.now
        var index = 0
        var clock = 0
        for round in 0..<200 {
            for _ in 0..<Int.random(in: 0..<40, using: &generator) {
                // Mostly later than all before (an unlock's timeout), sometimes earlier.
                let deadline = Bool.random(using: &generator) && round % 3 != 0 ? clock + 3_000 : clock + Int.random(in: 0..<3_000, using: &generator)
                let me = index
                heap.insert(start + .microseconds(deadline)) { fired.withLock { $0.append(me) } }
                expected.append((deadline, index))
                index += 1
            }
            clock += Int.random(in: 0..<400, using: &generator)
            for action in heap.popDue(start + .microseconds(clock)) { action() }
            let due = expected.filter { $0.deadline <= clock }.sorted { ($0.deadline, $0.index) < ($1.deadline, $1.index) }
            #expect(fired.withLock { $0 } == due.map(\.index), "round \(round)")
            expected.removeAll { $0.deadline <= clock }
            fired.withLock { $0 = [] }
            #expect(heap.earliest == expected.map(\.deadline).min().map { start + .microseconds($0) })
        }
        for action in heap.popDue(start + .seconds(3_600)) { action() }
        #expect(fired.withLock { $0.count } == expected.count)
        #expect(heap.isEmpty)
    }

    @Test func aFiredActionIsReleased() {
        final class Token: Sendable {}
        weak var weakToken: Token?
        var heap = TimerHeap()
        let start = ContinuousClock.now
        do {
            let token = Token()
            weakToken = token
            heap.insert(start + .milliseconds(1)) { _ = token }
        }
        heap.insert(start + .milliseconds(2)) {}  // keeps the run from being emptied
        #expect(weakToken != nil)
        for action in heap.popDue(start + .milliseconds(1)) { action() }
        #expect(weakToken == nil)
    }

    @Test func aLoopRunsScheduledActionsOnItsThread() async throws {
        let loop = MQTTEventLoop(name: "timers")
        let ran = Mutex<Bool>(false)
        let start = ContinuousClock.now
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.schedule(after: .milliseconds(50)) {
                ran.withLock { $0 = true }
                continuation.resume()
            }
        }
        #expect(ran.withLock { $0 })
        #expect(start.duration(to: .now) >= .milliseconds(50))
        await loop.shutdown()
    }

    /// Waits for `body` to call its completion, at most `limit`; returns how long it took, or nil.
    func elapsed(limit: Duration, _ body: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) async -> Duration? {
        let start = ContinuousClock.now
        let done = AsyncStream<Duration?>.makeStream()
        body { done.continuation.yield(start.duration(to: .now)) }
        let guardTask = Task {
            try? await Task.sleep(for: limit)
            done.continuation.yield(nil)
        }
        defer { guardTask.cancel() }
        for await result in done.stream { return result }
        return nil
    }

    /// A timer due later than twice the housekeeping interval is handed in without waking the loop;
    /// the loop files it at its next housekeeping, well before it is due.
    @Test func aLaterTimerHandedInWithoutAWakeUpStillFires() async throws {
        let loop = MQTTEventLoop(name: "timers", logger: Logger(label: "test"), housekeepingInterval: .milliseconds(400))
        let took = await elapsed(limit: .seconds(10)) { done in loop.schedule(after: .seconds(1)) { done() } }
        #expect(took.map { $0 >= .seconds(1) } == true, "\(String(describing: took))")
        await loop.shutdown()
    }

    /// Work handed in from the loop's own thread wakes nobody, so the loop must see it before it
    /// sleeps. With a 5-second housekeeping interval, five timers each scheduled by the previous
    /// one's action would take about 25 s if each waited for housekeeping; they take milliseconds.
    @Test func workHandedInFromTheLoopThreadRunsWithoutWaiting() async throws {
        let loop = MQTTEventLoop(name: "timers", logger: Logger(label: "test"), housekeepingInterval: .seconds(5))
        // Let the loop's first housekeeping pass, so that it would sleep for the whole interval.
        try await Task.sleep(for: .milliseconds(100))
        let took = await elapsed(limit: .seconds(4)) { done in
            @Sendable func chain(_ remaining: Int) {
                guard remaining > 0 else { return done() }
                loop.schedule(after: .zero) { chain(remaining - 1) }
            }
            loop.schedule(after: .zero) { chain(5) }
        }
        #expect(took != nil)
        await loop.shutdown()
    }
}
