import Foundation
import GRDB
import SiteHarness
import Synchronization
import Testing
import UnlockITCore

@testable import UnlockITStore

/// A page of the audit log that visits every event of a long log runs off the threads every
/// request of every company runs on (Swift's shared pool, one thread per core).
@Suite struct LongAuditQueryTests {
    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    @Test("Long audit queries, more of them than cores or read connections, hold no shared thread and no connection other reads need")
    func longAuditQueriesLeaveTheSharedThreadsFree() async throws {
        // In memory where there is a tmpfs: the log's tens of megabytes, written back to a disk,
        // made every fsync of the tests running alongside wait seconds for them.
        let memory = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : nil
        let directory = try TemporaryDirectory("unlockit-long-audit", in: memory)
        let store = try SQLiteStore(path: "\(directory.path)/unlockit.sqlite")
        let company = CompanyID.generate()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        // Half the events are granted unlocks, half failed sign-ins: a page of failed unlocks finds
        // none, and whichever index SQLite takes, it visits half the log (a quarter of a second here).
        // Written on GRDB's writer queue: inline, it would hold a shared thread from the other tests.
        try await store.pool.write { db in
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400000)
                    INSERT INTO auditEvent (companyId, number, at, action, outcome)
                    SELECT ?, i, ?, CASE i % 2 WHEN 0 THEN 'unlock' ELSE 'sign_in' END, CASE i % 2 WHEN 0 THEN 'success' ELSE 'error' END
                    FROM n
                    """, arguments: [company.rawValue, StorageDate.text(now)])
        }
        let query = AuditQuery(
            companyID: company, action: .unlock, outcome: .error, from: now.addingTimeInterval(-86_400), to: now.addingTimeInterval(86_400))

        // The queries are queued first, then a task that reads something else a moment later, the
        // way every other read of the store does, and looks how many queries have finished. Were they run on the
        // shared threads, or on the read connections the others use (GRDB's five), that read would
        // wait for one of them to finish.
        let queries = max(ProcessInfo.processInfo.activeProcessorCount + 1, 6)
        let finished = Counter()
        let finishedWhenLooked = try await withThrowingTaskGroup(of: Int?.self) { group in
            for _ in 0..<queries {
                group.addTask {
                    let events = try await store.auditEvents(query)
                    #expect(events.isEmpty)
                    finished.value.add(1, ordering: .relaxed)
                    return nil
                }
            }
            group.addTask {
                // A tenth of a second for the queries to take every connection they can.
                try await Task.sleep(for: .milliseconds(100))
                let rooms = try await store.rooms(in: company)
                #expect(rooms.isEmpty)
                return finished.value.load(ordering: .relaxed)
            }
            var looked: Int?
            for try await result in group { looked = looked ?? result }
            return looked
        }
        #expect(finishedWhenLooked == 0)
        #expect(finished.value.load(ordering: .relaxed) == queries)
        withExtendedLifetime(directory) {}
    }
}
