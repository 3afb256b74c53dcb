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

    /// A timer due later than the housekeeping interval is handed in without waking the loop; the
    /// loop must still file it in time.
    @Test func aLaterTimerHandedInWithoutAWakeUpStillFiresOnTime() async throws {
        let loop = MQTTEventLoop(name: "timers")
        let start = ContinuousClock.now
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.schedule(after: .milliseconds(600)) { continuation.resume() }
        }
        let elapsed = start.duration(to: .now)
        #expect(elapsed >= .milliseconds(600))
        #expect(elapsed < .milliseconds(900))
        await loop.shutdown()
    }

    /// Work handed in from the loop's own thread wakes nobody; the loop must not sleep on it. Five
    /// timers, each scheduled by the previous one's action, would take about a second if each
    /// waited for the loop's housekeeping.
    @Test func workHandedInFromTheLoopThreadRunsWithoutWaiting() async throws {
        let loop = MQTTEventLoop(name: "timers")
        let start = ContinuousClock.now
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            @Sendable func chain(_ remaining: Int) {
                guard remaining > 0 else { return continuation.resume() }
                loop.schedule(after: .zero) { chain(remaining - 1) }
            }
            loop.schedule(after: .zero) { chain(5) }
        }
        let elapsed = start.duration(to: .now)
        #expect(elapsed < .milliseconds(200))
        await loop.shutdown()
    }
}
