import Logging
import Synchronization
import Testing

@testable import UnlockITServer

@Suite struct FinalAuditFlushTests {
    struct DiskFull: Error {}

    @Test func aFailedWriteAtStopIsTriedAgain() async {
        let calls = Mutex(0)
        await FinalAuditFlush.run(firstDelay: .milliseconds(1), logger: Logger(label: "test")) {
            let call = calls.withLock {
                $0 += 1; return $0
            }
            if call < 3 { throw DiskFull() }
        }
        #expect(calls.withLock { $0 } == 3)
    }

    @Test func itGivesUpAfterItsAttempts() async {
        let calls = Mutex(0)
        await FinalAuditFlush.run(attempts: 4, firstDelay: .milliseconds(1), logger: Logger(label: "test")) {
            calls.withLock { $0 += 1 }
            throw DiskFull()
        }
        #expect(calls.withLock { $0 } == 4)
    }
}
