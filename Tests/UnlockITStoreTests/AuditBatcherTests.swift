import Foundation
import SiteHarness
import Synchronization
import Testing
import UnlockITCore

@testable import UnlockITStore

/// The audit log's write queue, with a commit function that records, fails or blocks on demand.
@Suite struct AuditBatcherTests {
    struct DiskFull: Error {}

    /// Stands in for the database: keeps what was committed, one array per transaction.
    final class Disk: Sendable {
        private struct State {
            var transactions: [[String]] = []
            var failing = false
            var failOnceContaining: String?
        }
        private let state = Mutex(State())
        /// While closed, a commit waits (the disk is slow).
        let gate = DispatchSemaphore(value: 1)

        func setFailing(_ failing: Bool) { state.withLock { $0.failing = failing } }
        func failOnce(containing tag: String) { state.withLock { $0.failOnceContaining = tag } }
        var transactions: [[String]] { state.withLock { $0.transactions } }
        var written: [String] { transactions.flatMap { $0 } }

        func commit(_ events: [AuditEvent]) throws {
            gate.wait()
            defer { gate.signal() }
            let tags = events.map { $0.reason ?? "" }
            try state.withLock { state in
                if state.failing { throw DiskFull() }
                if let tag = state.failOnceContaining, tags.contains(tag) {
                    state.failOnceContaining = nil
                    throw DiskFull()
                }
                state.transactions.append(tags)
            }
        }

        /// Waits (up to 5 s of the test's own time) until `count` events are written; the test then
        /// checks what was.
        func waitForWritten(_ count: Int) async {
            try? await Network.waitUntil("\(count) events written", timeout: .seconds(5)) { written.count >= count }
        }
    }

    let company = CompanyID.generate()

    func event(_ tag: String) -> AuditEvent {
        AuditEvent(companyID: company, at: Date(), actorID: nil, action: .unlock, outcome: .success, reason: tag)
    }

    @Test func queuedEventsAreWrittenInOrderAndAFlushWaitsForThem() async throws {
        let disk = Disk()
        let batcher = AuditBatcher { try disk.commit($0) }
        disk.gate.wait()  // a slow disk: everything below piles up behind the first commit
        let tags = (0..<200).map { "e\($0)" }
        for tag in tags { batcher.enqueue(event(tag)) }
        #expect(disk.written.isEmpty)
        disk.gate.signal()
        try await batcher.flush()
        #expect(disk.written == tags)
        // What piled up went in a few transactions, not one each.
        #expect(disk.transactions.count < 10)
    }

    @Test func aFlushWithNothingQueuedReturnsAtOnce() async throws {
        let disk = Disk()
        let batcher = AuditBatcher { try disk.commit($0) }
        try await batcher.flush()
        try await batcher.append(event("a"))
        try await batcher.flush()
        #expect(disk.written == ["a"])
    }

    @Test func queuedEventsSurviveFailedCommitsAndAreWrittenOnce() async throws {
        let disk = Disk()
        let failures = Atomic<Int>(0)
        let batcher = AuditBatcher(retryDelay: .milliseconds(20), onFailure: { _ in failures.add(1, ordering: .relaxed) }) {
            try disk.commit($0)
        }
        disk.setFailing(true)
        for tag in ["a", "b", "c"] { batcher.enqueue(event(tag)) }
        // The flush learns of the failure instead of pretending the log is complete.
        await #expect(throws: DiskFull.self) { try await batcher.flush() }
        #expect(disk.written.isEmpty)
        #expect(failures.load(ordering: .relaxed) >= 1)
        // The disk recovers; the retries go on by themselves and write everything once, in order.
        disk.setFailing(false)
        await disk.waitForWritten(3)
        #expect(disk.written == ["a", "b", "c"])
        try await batcher.flush()
    }

    @Test func anAwaitedAppendReportsItsFailureAndIsNotRetried() async throws {
        let disk = Disk()
        let batcher = AuditBatcher(retryDelay: .milliseconds(20)) { try disk.commit($0) }
        disk.failOnce(containing: "awaited")
        batcher.enqueue(event("queued-before"))
        // Its caller hears of the failure (as from a failed write), so the event is not written later.
        await #expect(throws: DiskFull.self) { try await batcher.append(event("awaited")) }
        batcher.enqueue(event("queued-after"))
        try await batcher.flush()
        #expect(disk.written == ["queued-before", "queued-after"])
    }

    @Test func aFullQueueHasNoRoomUntilItDrains() async throws {
        let disk = Disk()
        let batcher = AuditBatcher(capacity: 50) { try disk.commit($0) }
        disk.gate.wait()
        for index in 0..<49 { batcher.enqueue(event("e\(index)")) }
        #expect(batcher.hasRoom)
        batcher.enqueue(event("e49"))
        batcher.enqueue(event("e50"))
        #expect(!batcher.hasRoom)
        disk.gate.signal()
        try await batcher.flush()
        #expect(batcher.hasRoom)
        #expect(disk.written.count == 51)
    }

    // A linger far longer than any test: whatever is written early was written for another reason.
    static let forever = DispatchTimeInterval.seconds(600)

    @Test func queuedEventsWaitForCompanyAndAFlushEndsTheWait() async throws {
        let disk = Disk()
        let batcher = AuditBatcher(linger: Self.forever) { try disk.commit($0) }
        let tags = (0..<50).map { "e\($0)" }
        for tag in tags { batcher.enqueue(event(tag)) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(disk.written.isEmpty)
        // An audit reader flushes: the wait ends at once, and all fifty share one transaction.
        try await batcher.flush()
        #expect(disk.transactions == [tags])
    }

    @Test func anAwaitedAppendEndsTheWaitForWhatIsQueuedBeforeIt() async throws {
        let disk = Disk()
        let batcher = AuditBatcher(linger: Self.forever) { try disk.commit($0) }
        batcher.enqueue(event("queued"))
        try await batcher.append(event("awaited"))
        #expect(disk.transactions == [["queued", "awaited"]])
    }

    @Test func aFullBatchDoesNotWait() async throws {
        let disk = Disk()
        let batcher = AuditBatcher(linger: Self.forever) { try disk.commit($0) }
        for index in 0..<1000 { batcher.enqueue(event("e\(index)")) }
        await disk.waitForWritten(1000)
        #expect(disk.written.count == 1000)
    }

    @Test func withAShortLingerQueuedEventsAreWrittenWithoutAFlush() async throws {
        let disk = Disk()
        let batcher = AuditBatcher(linger: .milliseconds(10)) { try disk.commit($0) }
        for tag in ["a", "b", "c"] { batcher.enqueue(event(tag)) }
        await disk.waitForWritten(3)
        #expect(disk.written == ["a", "b", "c"])
    }

    @Test(.timeLimit(.minutes(1))) func underConcurrentUseEveryEventIsWrittenOnceInItsCallersOrder() async throws {
        let disk = Disk()
        let batcher = AuditBatcher(linger: .milliseconds(1)) { try disk.commit($0) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<8 {
                group.addTask {
                    var random = SystemRandomNumberGenerator()
                    for index in 0..<200 {
                        let tag = "c\(caller)-\(index)"
                        switch Int.random(in: 0..<10, using: &random) {
                        case 0..<7: batcher.enqueue(event(tag))
                        case 7..<9: try await batcher.append(event(tag))
                        default:
                            batcher.enqueue(event(tag))
                            try await batcher.flush()
                        }
                        if index % 50 == 0 { try await Task.sleep(for: .milliseconds(2)) }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await batcher.flush()
        let written = disk.written
        #expect(written.count == 1600)
        #expect(Set(written).count == 1600)
        for caller in 0..<8 {
            #expect(written.filter { $0.hasPrefix("c\(caller)-") } == (0..<200).map { "c\(caller)-\($0)" })
        }
    }
}
