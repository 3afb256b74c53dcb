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
    }

    var lock: Lock? {
        guard let lockID = LockID(id) else { return nil }
        return Lock(
            id: lockID, companyID: CompanyID(unchecked: companyId), roomID: roomId.map(RoomID.init(unchecked:)), name: name,
            state: LockState(rawValue: state) ?? .retired, online: online, lastSeen: lastSeen, firmwareVersion: firmwareVersion,
            createdAt: createdAt, activatedAt: activatedAt, retiredAt: retiredAt)
    }
}
