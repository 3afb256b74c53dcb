import Foundation
import GRDB
import UnlockITCore

/// An audit event as read back (``SQLiteStore/insertAudit(_:_:)`` writes them with a prepared
/// statement, on the unlock path).
struct AuditRecord: Codable, FetchableRecord, TableRecord {
    static let databaseTableName = "auditEvent"
    /// The row id, which counts every company's events: for the order and the indexes, never shown.
    var id: Int64?
    var companyId: String
    /// The event's number in its company's log, which is what the API shows as its id.
    var number: Int64
    var at: Date
    var actorId: String?
    var action: String
    var lockId: String?
    var roomId: String?
    var subjectId: String?
    var outcome: String
    var reason: String?
    /// ``AuditChange``s as JSON; `NULL` for none.
    var changes: String?

    var event: AuditEvent {
        AuditEvent(
            id: number, companyID: CompanyID(unchecked: companyId), at: at, actorID: actorId.map(UserID.init(unchecked:)),
            action: AuditAction(rawValue: action) ?? .unlock, lockID: lockId.flatMap(LockID.init), roomID: roomId.map(RoomID.init(unchecked:)),
            subjectID: subjectId.map(UserID.init(unchecked:)), outcome: AuditOutcome(rawValue: outcome) ?? .error, reason: reason,
            changes: changes.flatMap { try? JSONDecoder().decode([AuditChange].self, from: Data($0.utf8)) } ?? [])
    }
}
