import Foundation
import Hummingbird
import UnlockITCore

/// How the API shows the domain. Field names are part of the API contract (docs/api/openapi.json).

struct UserResponse: ResponseCodable {
    var id: String
    var email: String
    var name: String
    var role: Role
    var securityLevel: Int
    var enabled: Bool
    var mustChangePassword: Bool
    var createdAt: Date
    var updatedAt: Date
    /// Only in one user's answer (`GET /users/{id}`): the OpenID Connect issuers at which the user is
    /// linked to an account (``OIDCIdentity``), so that an admin sees whom `identity_mismatch` is
    /// about before unlinking. Never the account's `sub`.
    var oidcIssuers: [String]?

    init(_ user: User) {
        id = user.id.rawValue
        email = user.email
        name = user.name
        role = user.role
        securityLevel = user.securityLevel
        enabled = user.enabled
        mustChangePassword = user.mustChangePassword
        createdAt = user.createdAt
        updatedAt = user.updatedAt
    }
}

struct RoomResponse: ResponseCodable {
    var id: String
    var name: String
    var description: String
    var type: RoomType
    var bookable: Bool
    /// `null`: only the authorized users may enter.
    var requiredLevel: Int?
    var authorizedUsers: [String]
    var createdAt: Date
    var updatedAt: Date

    init(_ room: Room) {
        id = room.id.rawValue
        name = room.name
        description = room.description
        type = room.type
        bookable = room.bookable
        requiredLevel = room.requiredLevel
        authorizedUsers = room.authorizedUsers.map(\.rawValue).sorted()
        createdAt = room.createdAt
        updatedAt = room.updatedAt
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(description, forKey: .description)
        try container.encode(type, forKey: .type)
        try container.encode(bookable, forKey: .bookable)
        // Always present, `null` included: "no required level" is information, not absence.
        try container.encode(requiredLevel, forKey: .requiredLevel)
        try container.encode(authorizedUsers, forKey: .authorizedUsers)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}

struct LockResponse: ResponseCodable {
    var id: String
    var name: String
    var roomId: String?
    var state: LockState
    var online: Bool
    var lastSeen: Date?
    var firmwareVersion: String?
    var createdAt: Date
    var activatedAt: Date?
    var retiredAt: Date?

    /// The stored lock, with the gateway's live presence where it knows better.
    init(_ lock: Lock, presence: LockPresence?) {
        id = lock.id.rawValue
        name = lock.name
        roomId = lock.roomID?.rawValue
        state = lock.state
        online = lock.state != .retired && (presence?.online ?? lock.online)
        lastSeen = presence?.lastSeen ?? lock.lastSeen
        firmwareVersion = presence?.firmwareVersion ?? lock.firmwareVersion
        createdAt = lock.createdAt
        activatedAt = lock.activatedAt
        retiredAt = lock.retiredAt
    }
}

struct AuditEventResponse: ResponseCodable {
    var id: Int64
    var at: Date
    var action: AuditAction
    var outcome: AuditOutcome
    var reason: String?
    var actorId: String?
    var subjectId: String?
    var lockId: String?
    var roomId: String?
    /// What a user's or room's creation, update or deletion, a lock's update, or a registration over
    /// a retired lock's device id set; absent for other events.
    var changes: [AuditChange]?

    init(_ event: AuditEvent) {
        id = event.id
        at = event.at
        action = event.action
        outcome = event.outcome
        reason = event.reason
        actorId = event.actorID?.rawValue
        subjectId = event.subjectID?.rawValue
        lockId = event.lockID?.rawValue
        roomId = event.roomID?.rawValue
        changes = event.changes.isEmpty ? nil : event.changes
    }
}

/// A list: `{"items":[…]}`.
struct ListResponse<Item: Codable & Sendable>: ResponseCodable {
    var items: [Item]
}
