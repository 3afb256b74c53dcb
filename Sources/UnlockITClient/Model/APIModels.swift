import Foundation
import UnlockITCore
import UnlockITLocalization

/// The server's JSON, as the CLI reads it (docs/api/openapi.json). With `--json` the CLI prints these
/// same shapes, so their field names are the API's, and as stable.

struct UserModel: Codable, Sendable {
    var id: String
    var email: String
    var name: String
    var role: Role
    var securityLevel: Int
    var enabled: Bool
    var mustChangePassword: Bool
    var createdAt: Date
    var updatedAt: Date
    /// Only in one user's answer: the OpenID Connect issuers the user is linked to an account at.
    var oidcIssuers: [String]?
}

struct RoomModel: Codable, Sendable {
    var id: String
    var name: String
    var description: String
    var type: RoomType
    var bookable: Bool
    var requiredLevel: Int?
    var authorizedUsers: [String]
    var createdAt: Date
    var updatedAt: Date

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(description, forKey: .description)
        try container.encode(type, forKey: .type)
        try container.encode(bookable, forKey: .bookable)
        try container.encode(requiredLevel, forKey: .requiredLevel)
        try container.encode(authorizedUsers, forKey: .authorizedUsers)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}

struct LockModel: Codable, Sendable {
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
}

struct AuditEventModel: Codable, Sendable {
    var id: Int64
    var at: Date
    var action: String
    var outcome: String
    var reason: String?
    var actorId: String?
    var subjectId: String?
    var lockId: String?
    var roomId: String?
    var changes: [AuditChangeModel]?
}

struct AuditChangeModel: Codable, Sendable {
    var field: String
    var from: String?
    var to: String?
}

struct AccessEntryModel: Codable, Sendable {
    var lockId: String
    var lockName: String
    var roomId: String?
    var roomName: String?
    var allowed: Bool
    var reason: String
    var online: Bool
}

struct MeModel: Codable, Sendable {
    struct Company: Codable, Sendable {
        var id: String
        var name: String
    }
    var user: UserModel
    var company: Company
}

struct SignedInModel: Codable, Sendable {
    var token: String
    var lifetime: Int
    var expiresAt: Date
    var mustChangePassword: Bool
    var user: UserModel
}

struct CreatedUserModel: Codable, Sendable {
    var user: UserModel
    var initialPassword: String?
}

struct ImportedModel: Codable, Sendable {
    var dryRun: Bool
    var created: [CreatedUserModel]
}

struct RegisteredLockModel: Codable, Sendable {
    struct Broker: Codable, Sendable {
        var broker: String
        var username: String
        var password: String
    }
    var lock: LockModel
    var mqtt: Broker
}

struct UnlockedModel: Codable, Sendable {
    var lockId: String
    var granted: Bool
    var outcome: String
}

struct ItemsModel<Item: Codable & Sendable>: Codable, Sendable {
    var items: [Item]
}

struct AuditPageModel: Codable, Sendable {
    var items: [AuditEventModel]
    var nextBefore: Int64?
}

struct PasswordResetModel: Codable, Sendable {
    var initialPassword: String?
}

/// How many accounts at OpenID Connect issuers an admin unlinked a user from.
struct UnlinkedModel: Codable, Sendable {
    var unlinked: Int
}
