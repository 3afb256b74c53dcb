import Foundation

/// One field an admin change set, as the audit log records it: which field (its API name), and its
/// value before and after as text (`nil`: none, or no value before a creation).
public struct AuditChange: Sendable, Equatable, Codable {
    public var field: String
    public var from: String?
    public var to: String?

    public init(field: String, from: String?, to: String?) {
        self.field = field
        self.from = from
        self.to = to
    }

    /// What an update of `old` into `new` changed, field by field, in a fixed order: what decides
    /// who may open what (role, level, enabled) and how the user is known.
    public static func between(_ old: User, _ new: User) -> [AuditChange] {
        fields(of: old).changes(to: fields(of: new))
    }

    /// What an update of `old` into `new` changed: the rule's required level first.
    public static func between(_ old: Room, _ new: Room) -> [AuditChange] {
        fields(of: old).changes(to: fields(of: new))
    }

    /// What a lock's update changed: its name and its room (by id).
    public static func between(_ old: Lock, _ new: Lock) -> [AuditChange] {
        func fields(_ lock: Lock) -> [(field: String, value: String?)] { [("name", lock.name), ("roomId", lock.roomID?.rawValue)] }
        return fields(old).changes(to: fields(new))
    }

    /// What a new user was made with (their password aside).
    public static func created(_ user: User) -> [AuditChange] {
        fields(of: user).map { AuditChange(field: $0.field, from: nil, to: $0.value) }
    }

    /// What a new room was made with.
    public static func created(_ room: Room) -> [AuditChange] {
        fields(of: room).compactMap { $0.value == nil ? nil : AuditChange(field: $0.field, from: nil, to: $0.value) }
    }

    /// What a deleted user was (their password aside): the log keeps who they were after the row is gone.
    public static func deleted(_ user: User) -> [AuditChange] {
        fields(of: user).map { AuditChange(field: $0.field, from: $0.value, to: nil) }
    }

    /// What a deleted room was.
    public static func deleted(_ room: Room) -> [AuditChange] {
        fields(of: room).compactMap { $0.value == nil ? nil : AuditChange(field: $0.field, from: $0.value, to: nil) }
    }

    private static func fields(of user: User) -> [(field: String, value: String?)] {
        [
            ("role", user.role.rawValue), ("securityLevel", String(user.securityLevel)), ("enabled", String(user.enabled)),
            ("email", user.email), ("name", user.name),
        ]
    }

    private static func fields(of room: Room) -> [(field: String, value: String?)] {
        [
            ("requiredLevel", room.requiredLevel.map(String.init)), ("name", room.name), ("type", room.type.rawValue),
            ("bookable", String(room.bookable)), ("description", room.description.isEmpty ? nil : room.description),
        ]
    }
}

extension [(field: String, value: String?)] {
    fileprivate func changes(to new: Self) -> [AuditChange] {
        zip(self, new).compactMap { old, new in old.value == new.value ? nil : AuditChange(field: old.field, from: old.value, to: new.value) }
    }
}
