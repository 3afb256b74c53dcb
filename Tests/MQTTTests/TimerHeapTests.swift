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
