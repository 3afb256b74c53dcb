import Foundation
import GRDB
import UnlockITCore

struct LockRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "lock"
    var id: String
    var companyId: String
    var roomId: String?
    var name: String
    var state: String
    var online: Bool
    var lastSeen: Date?
    var firmwareVersion: String?
    var sealedKey: Data?
    var pendingKey: Data?
    var pendingWrappedKey: Data?
    var createdAt: Date
    var activatedAt: Date?
    var retiredAt: Date?
    /// ``LockIDClaim/heldSince``; NULL only in a row a test wrote by hand (read as `createdAt`).
    var heldSince: Date?

    init(_ lock: Lock) {
        id = lock.id.rawValue
        companyId = lock.companyID.rawValue
        roomId = lock.roomID?.rawValue
        name = lock.name
        state = lock.state.rawValue
        online = lock.online
        lastSeen = lock.lastSeen
        firmwareVersion = lock.firmwareVersion
        sealedKey = nil
        pendingKey = nil
        pendingWrappedKey = nil
        createdAt = lock.createdAt
        activatedAt = lock.activatedAt
        retiredAt = lock.retiredAt
        heldSince = lock.createdAt
    }

    /// What decides whether the row keeps its device id (a state that cannot be read counts as active).
    var claim: LockIDClaim {
        LockIDClaim(
            companyID: CompanyID(unchecked: companyId), state: LockState(rawValue: state) ?? .active, heldSince: heldSince ?? createdAt,
            pairingPending: pendingKey != nil)
    }

    var lock: Lock? {
        guard let lockID = LockID(id) else { return nil }
        return Lock(
            id: lockID, companyID: CompanyID(unchecked: companyId), roomID: roomId.map(RoomID.init(unchecked:)), name: name,
            state: LockState(rawValue: state) ?? .retired, online: online, lastSeen: lastSeen, firmwareVersion: firmwareVersion,
            createdAt: createdAt, activatedAt: activatedAt, retiredAt: retiredAt)
    }
}
