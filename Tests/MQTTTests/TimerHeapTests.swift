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
}
