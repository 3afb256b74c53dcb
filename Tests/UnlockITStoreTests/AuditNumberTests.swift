import Foundation
import GRDB
import SiteHarness
import Testing
import UnlockITCore

@testable import UnlockITStore

/// An audit event's id is its number in its company's log (migration v10), so that one company's
/// ids say nothing of other companies' events between them.
extension SQLiteStoreTests {
    /// Events of `company` appended one at a time, and queued ones of `other` between each two.
    private func interleave(_ company: CompanyID, _ other: CompanyID, count: Int) async throws {
        for index in 0..<count {
            try await store.append(
                AuditEvent(
                    companyID: company, at: now.addingTimeInterval(Double(index)), actorID: nil, action: .unlock, outcome: .success,
                    reason: "own \(index)"))
            for _ in 0..<3 { store.enqueue(AuditEvent(companyID: other, at: now, actorID: nil, action: .signIn, outcome: .denied)) }
        }
        try await store.flushAudit()
    }

    @Test("Each company's events are numbered 1, 2, 3… whatever other companies wrote between them, also within one batch")
    func eventsAreNumberedPerCompany() async throws {
        let (alpha, _) = try await makeCompany("NumberAlpha")
        let (beta, _) = try await makeCompany("NumberBeta")
        try await interleave(alpha.id, beta.id, count: 5)
        // One batch with both companies' events mixed.
        for index in 0..<20 {
            store.enqueue(
                AuditEvent(companyID: index % 3 == 0 ? alpha.id : beta.id, at: now, actorID: nil, action: .unlock, outcome: .success))
        }
        try await store.flushAudit()
        let alphaIDs = try await store.auditEvents(AuditQuery(companyID: alpha.id, limit: 1000)).map(\.id)
        let betaIDs = try await store.auditEvents(AuditQuery(companyID: beta.id, limit: 1000)).map(\.id)
        // The creation of the company and its admin is event 1 of each.
        #expect(alphaIDs == Array((1...(1 + 5 + 7)).reversed()), "\(alphaIDs)")
        #expect(betaIDs == Array((1...(1 + 15 + 13)).reversed()), "\(betaIDs)")
    }

    @Test("The paging cursor is a number in the company's log: by number, by time, and one that is no event of the company's")
    func pagesFollowTheCompanysNumbers() async throws {
        let (alpha, _) = try await makeCompany("CursorAlpha")
        let (beta, _) = try await makeCompany("CursorBeta")
        try await interleave(alpha.id, beta.id, count: 6)  // Alpha: 1 (creation), 2…7 ("own 0"…"own 5")
        let page1 = try await store.auditEvents(AuditQuery(companyID: alpha.id, limit: 3))
        #expect(page1.map(\.id) == [7, 6, 5])
        let page2 = try await store.auditEvents(AuditQuery(companyID: alpha.id, before: page1.last!.id, limit: 3))
        #expect(page2.map(\.id) == [4, 3, 2])
        #expect(try await store.auditEvents(AuditQuery(companyID: alpha.id, before: 2, limit: 3)).map(\.id) == [1])
        #expect(try await store.auditEvents(AuditQuery(companyID: alpha.id, before: 1)).isEmpty)
        // Beyond the company's last number (Beta's log is longer): as a number no event has, from there down.
        #expect(try await store.auditEvents(AuditQuery(companyID: alpha.id, before: 15, limit: 2)).map(\.id) == [7, 6])
        // By time (the window holds "own 1"…"own 4", numbered 3…6): the cursor's place in time.
        let window = AuditQuery(companyID: alpha.id, from: now.addingTimeInterval(1), to: now.addingTimeInterval(5), limit: 2)
        let first = try await store.auditEvents(window)
        #expect(first.map(\.reason) == ["own 4", "own 3"])
        var next = window
        next.before = first.last!.id
        #expect(try await store.auditEvents(next).map(\.reason) == ["own 2", "own 1"])
    }

    @Test("Another store on the same file (an operator's command) numbers on from the same log, and numbers are unique")
    func anotherWriterNumbersOn() async throws {
        let (alpha, _) = try await makeCompany("Writers")
        let other = try SQLiteStore(path: "\(directory.path)/db/unlockit.sqlite")
        for index in 0..<4 {
            let writer = index.isMultiple(of: 2) ? store : other
            try await writer.append(AuditEvent(companyID: alpha.id, at: now, actorID: nil, action: .unlock, outcome: .success))
        }
        #expect(try await store.auditEvents(AuditQuery(companyID: alpha.id)).map(\.id) == [5, 4, 3, 2, 1])
        // Two events of one company with one number are refused by the database itself.
        let path = "\(directory.path)/db/unlockit.sqlite"
        #expect(throws: DatabaseError.self) {
            try DatabaseQueue(path: path).write { db in
                try db.execute(
                    sql: "INSERT INTO auditEvent (companyId, number, at, action, outcome) VALUES (?, 5, ?, 'unlock', 'success')",
                    arguments: [alpha.id.rawValue, now])
            }
        }
    }

    @Test("The upgrade numbers the events already in the log per company, in their order, and the log stays append-only")
    func theUpgradeNumbersTheEventsThere() throws {
        let path = "\(directory.path)/old.sqlite"
        let old = try DatabaseQueue(path: path)
        try Migrations.migrator.migrate(old, upTo: "v9: device ids the operator released to a company")
        let (alpha, beta) = ("c-alpha", "c-beta")
        try old.write { db in
            for (index, company) in [alpha, beta, beta, alpha, beta, alpha, alpha].enumerated() {
                try db.execute(
                    sql: "INSERT INTO auditEvent (companyId, at, action, outcome, reason) VALUES (?, ?, 'unlock', 'success', ?)",
                    arguments: [company, now, "\(company) \(index)"])
            }
        }
        try old.close()
        _ = try SQLiteStore(path: path)  // migrates
        let upgraded = try DatabaseQueue(path: path)
        let numbered = try upgraded.read { db in
            try Row.fetchAll(db, sql: "SELECT reason, number FROM auditEvent ORDER BY id").map { "\($0["reason"] as String) #\($0["number"] as Int)" }
        }
        #expect(
            numbered == [
                "c-alpha 0 #1", "c-beta 1 #1", "c-beta 2 #2", "c-alpha 3 #2", "c-beta 4 #3", "c-alpha 5 #3", "c-alpha 6 #4",
            ])
        #expect(throws: DatabaseError.self) { try upgraded.write { db in try db.execute(sql: "UPDATE auditEvent SET reason = 'changed'") } }
        #expect(throws: DatabaseError.self) { try upgraded.write { db in try db.execute(sql: "DELETE FROM auditEvent") } }
    }

    @Test("A page without a window runs down an index that ends in its order: the number's, or the filtered column's")
    func pagesNeedNoSort() async throws {
        let (company, _) = try await makeCompany("Plans")
        let cases: [(AuditQuery, String)] = [
            (AuditQuery(companyID: company.id), "auditEvent_number"),
            (AuditQuery(companyID: company.id, before: 42), "auditEvent_number"),
            (AuditQuery(companyID: company.id, lockID: LockID("lock-plan")!, before: 42), "auditEvent_lock"),
            (AuditQuery(companyID: company.id, action: .unlock), "auditEvent_action"),
        ]
        for (query, index) in cases {
            let plan = try store.read { db in
                let statement = try SQLiteStore.auditRequest(query, db).makePreparedRequest(db).statement
                return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + statement.sql, arguments: statement.arguments).map { $0["detail"] as String }
            }
            #expect(plan.contains { $0.contains(index) }, "\(plan)")
            #expect(!plan.contains { $0.contains("TEMP B-TREE") || $0.hasPrefix("SCAN") }, "\(plan)")
        }
    }
}
