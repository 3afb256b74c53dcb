import Foundation
import GRDB
import UnlockITCore

struct AuditRecord: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "auditEvent"
    var id: Int64?
    var companyId: String
    var at: Date
    var actorId: String?
    var action: String
    var lockId: String?
    var roomId: String?
    var subjectId: String?
    var outcome: String
    var reason: String?

    init(_ event: AuditEvent) {
        id = nil
        companyId = event.companyID.rawValue
        at = event.at
        actorId = event.actorID?.rawValue
        action = event.action.rawValue
        lockId = event.lockID?.rawValue
        roomId = event.roomID?.rawValue
        subjectId = event.subjectID?.rawValue
        outcome = event.outcome.rawValue
        reason = event.reason
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    var event: AuditEvent {
        AuditEvent(
            id: id ?? 0, companyID: CompanyID(unchecked: companyId), at: at, actorID: actorId.map(UserID.init(unchecked:)),
            action: AuditAction(rawValue: action) ?? .unlock, lockID: lockId.flatMap(LockID.init), roomID: roomId.map(RoomID.init(unchecked:)),
            subjectID: subjectId.map(UserID.init(unchecked:)), outcome: AuditOutcome(rawValue: outcome) ?? .error, reason: reason)
    }
}
