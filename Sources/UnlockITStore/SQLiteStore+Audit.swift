import Foundation
import GRDB
import UnlockITCore

extension SQLiteStore {
    public func append(_ event: AuditEvent) async throws {
        try await audit.append(event)
    }

    public func enqueue(_ event: AuditEvent) {
        audit.enqueue(event)
    }

    public var auditHasRoom: Bool { audit.hasRoom }

    public func flushAudit() async throws {
        try await audit.flush()
    }

    public func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent] {
        // Whoever reads the log sees every event handed in before, queued ones included.
        try await audit.flush()
        // Not inline like the store's other reads (``read(_:)``): a wide window with a rare filter
        // visits every event in it, seconds for a year of a busy company, and inline that holds one
        // of the few threads every request of every company runs on. On connections of its own
        // (``auditReaders``), so that the other reads never wait for a connection it holds. The task
        // is suspended meanwhile, also while it waits for a connection, and its cancellation
        // interrupts the query.
        return try await auditReaders.read { db in try Self.auditRequest(query, db).fetchAll(db).map(\.event) }
    }

    /// The request for one page of the log.
    ///
    /// Without `from` or `to` a page is newest first: by number through the number index when no
    /// column is filtered, and otherwise by row id through the index of the filter's column (every
    /// one ends in the row id; within a company the two orders are the same). With either it is
    /// newest first by time, ties by row id, through the time index, whose entries end in the row
    /// id: it stops after `limit` events instead of sorting every event of the window (with a year's
    /// log and `from` a year back, seconds per page). `before` then names the previous page's last
    /// event, and the page continues after that event's place in time; a number that is no event of
    /// the company's still pages by number.
    ///
    /// `before` is a number in the company's log (``AuditEvent/id``). Where pages run by row id it
    /// is turned into the row id of the company's newest event numbered no higher (one step down
    /// the number index).
    static func auditRequest(_ query: AuditQuery, _ db: Database) throws -> QueryInterfaceRequest<AuditRecord> {
        let company = query.companyID.rawValue
        var request = AuditRecord.filter(Column("companyId") == company)
        var filtered = false
        if let user = query.userID {
            request = request.filter(Column("actorId") == user.rawValue || Column("subjectId") == user.rawValue)
            filtered = true
        }
        let columns = [
            ("lockId", query.lockID?.rawValue), ("roomId", query.roomID?.rawValue), ("action", query.action?.rawValue),
            ("outcome", query.outcome?.rawValue),
        ]
        for (column, value) in columns {
            guard let value else { continue }
            request = request.filter(Column(column) == value)
            filtered = true
        }
        if let from = query.from { request = request.filter(Column("at") >= from) }
        if let to = query.to { request = request.filter(Column("at") < to) }
        let byTime = query.from != nil || query.to != nil
        let byNumber = !byTime && !filtered
        if let before = query.before {
            if byNumber {
                request = request.filter(Column("number") < before)
            } else if let cursor = try Row.fetchOne(
                db, sql: "SELECT id, number, at FROM auditEvent WHERE companyId = ? AND number <= ? ORDER BY number DESC LIMIT 1",
                arguments: [company, before]), let row: Int64 = cursor["id"]
            {
                if cursor["number"] as Int64? != before {
                    request = request.filter(Column("id") <= row)  // the newest event below the number
                } else if byTime {
                    // The cursor's time as stored, so that it compares exactly as the column does.
                    request = request.filter(sql: "(at, id) < (?, ?)", arguments: [cursor["at"] as DatabaseValue, row])
                } else {
                    request = request.filter(Column("id") < row)
                }
            } else {
                request = request.filter(sql: "0")  // nothing numbered below it
            }
        }
        let order = byTime ? [Column("at").desc, Column("id").desc] : byNumber ? [Column("number").desc] : [Column("id").desc]
        return request.order(order).limit(max(1, min(query.limit, 1000)))
    }
}
