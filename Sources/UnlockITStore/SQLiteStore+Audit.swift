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
        return try read { db in
            var request = AuditRecord.filter(Column("companyId") == query.companyID.rawValue)
            if let user = query.userID {
                request = request.filter(Column("actorId") == user.rawValue || Column("subjectId") == user.rawValue)
            }
            if let lock = query.lockID { request = request.filter(Column("lockId") == lock.rawValue) }
            if let room = query.roomID { request = request.filter(Column("roomId") == room.rawValue) }
            if let action = query.action { request = request.filter(Column("action") == action.rawValue) }
            if let outcome = query.outcome { request = request.filter(Column("outcome") == outcome.rawValue) }
            if let from = query.from { request = request.filter(Column("at") >= from) }
            if let to = query.to { request = request.filter(Column("at") < to) }
            if let before = query.before { request = request.filter(Column("id") < before) }
            return try request.order(Column("id").desc).limit(max(1, min(query.limit, 1000))).fetchAll(db).map(\.event)
        }
    }
}
