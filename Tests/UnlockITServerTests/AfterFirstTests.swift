import Synchronization
import Testing

@testable import UnlockITServer

/// An unlock's `granted_late` event is queued after the `lock_timeout` it follows, whichever the
/// server learns of first.
@Suite struct AfterFirstTests {
    @Test func theSecondWaitsForTheFirst() {
        let log = Mutex<[String]>([])
        let order = AfterFirst()
        order.second { log.withLock { $0.append("granted_late") } }
        #expect(log.withLock { $0 }.isEmpty)
        log.withLock { $0.append("lock_timeout") }
        order.firstDone()
        #expect(log.withLock { $0 } == ["lock_timeout", "granted_late"])
    }

    @Test func aSecondAfterTheFirstRunsAtOnce() {
        let log = Mutex<[String]>([])
        let order = AfterFirst()
        log.withLock { $0.append("lock_timeout") }
        order.firstDone()
        order.second { log.withLock { $0.append("granted_late") } }
        #expect(log.withLock { $0 } == ["lock_timeout", "granted_late"])
    }
}
