import Synchronization
import Testing

@testable import UnlockITServer

/// One holder per key, in arrival order, and a wait bounded by its deadline.
@Suite struct KeyedSerializerTests {
    final class Order: Sendable {
        let numbers = Mutex<[Int]>([])
    }

    @Test func holdersTakeTurnsInArrivalOrderAndOtherKeysDoNotWait() async throws {
        let serializer = KeyedSerializer<String>()
        let far = ContinuousClock.now + .seconds(30)
        #expect(await serializer.acquire("a", deadline: far))
        #expect(await serializer.acquire("b", deadline: far))  // another key: at once

        let order = Order()
        var waiters: [Task<Void, Never>] = []
        for number in 1...3 {
            waiters.append(
                Task {
                    guard await serializer.acquire("a", deadline: far) else { return }
                    order.numbers.withLock { $0.append(number) }
                    serializer.release("a")
                })
            // Each queues before the next starts.
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(order.numbers.withLock { $0 }.isEmpty)
        serializer.release("a")
        for waiter in waiters { await waiter.value }
        #expect(order.numbers.withLock { $0 } == [1, 2, 3])
    }

    @Test func aWaitEndsAtItsDeadlineWithoutAHolderLettingGo() async throws {
        let serializer = KeyedSerializer<String>()
        #expect(await serializer.acquire("door", deadline: .now + .seconds(30)))
        let start = ContinuousClock.now
        #expect(await serializer.acquire("door", deadline: .now + .milliseconds(100)) == false)
        // Long before the holder's 30 s: at its own deadline. (Not closer to it: in the suite's
        // first seconds, with every suite starting at once, a fresh clone's run took 6 s here.)
        #expect(start.duration(to: .now) < .seconds(20))
        // A deadline already past (a caller delayed that long before asking) ends the wait at once,
        // whichever runs first, the timeout or the queueing.
        for _ in 0..<200 {
            #expect(await serializer.acquire("door", deadline: .now - .milliseconds(1)) == false)
        }
        #expect(start.duration(to: .now) < .seconds(20))
        // The holder still holds; once it lets go the key is free again.
        serializer.release("door")
        #expect(await serializer.acquire("door", deadline: .now))
    }
}
