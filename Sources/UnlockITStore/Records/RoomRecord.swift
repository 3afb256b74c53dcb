import Foundation
import GRDB
import UnlockITCore

struct RoomRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "room"
    var id: String
    var companyId: String
    var name: String
    /// `RoomName.key(name)`, unique per company; NULL only for a room that shared its key with an
    /// older one when migration v4 ran.
    var nameKey: String?
    var description: String
    var type: String
    var bookable: Bool
    var requiredLevel: Int?
    var createdAt: Date
    var updatedAt: Date

    init(_ room: Room) {
        id = room.id.rawValue
        companyId = room.companyID.rawValue
        name = room.name
        nameKey = RoomName.key(room.name)
        description = room.description
        type = room.type.rawValue
        bookable = room.bookable
        requiredLevel = room.requiredLevel
        createdAt = room.createdAt
        updatedAt = room.updatedAt
    }

    func room(authorizedUsers: Set<UserID>) -> Room {
        Room(
            id: RoomID(unchecked: id), companyID: CompanyID(unchecked: companyId), name: name, description: description,
            type: RoomType(rawValue: type) ?? .other, bookable: bookable, requiredLevel: requiredLevel, authorizedUsers: authorizedUsers,
            createdAt: createdAt, updatedAt: updatedAt)
    }
}

struct RoomAuthorizationRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "roomAuthorization"
    var roomId: String
    var userId: String
}
