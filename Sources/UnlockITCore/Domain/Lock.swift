import Foundation

/// A lock's life: registered (has broker credentials) → active (paired, holds a key) → retired.
public enum LockState: String, Sendable, Codable, CaseIterable {
    case registered
    case active
    case retired
}

/// A door lock, as the server knows it. The device key is not part of this value: it is sealed in
/// the store and only the lock gateway ever opens it.
public struct Lock: Sendable, Equatable {
    public var id: LockID
    public var companyID: CompanyID
    /// The room whose rule applies; `nil` only for a retired lock whose room was deleted.
    public var roomID: RoomID?
    public var name: String
    public var state: LockState
    public var online: Bool
    public var lastSeen: Date?
    public var firmwareVersion: String?
    public var createdAt: Date
    public var activatedAt: Date?
    public var retiredAt: Date?

    public init(
        id: LockID, companyID: CompanyID, roomID: RoomID?, name: String, state: LockState, online: Bool = false, lastSeen: Date? = nil,
        firmwareVersion: String? = nil, createdAt: Date, activatedAt: Date? = nil, retiredAt: Date? = nil
    ) {
        self.id = id
        self.companyID = companyID
        self.roomID = roomID
        self.name = name
        self.state = state
        self.online = online
        self.lastSeen = lastSeen
        self.firmwareVersion = firmwareVersion
        self.createdAt = createdAt
        self.activatedAt = activatedAt
        self.retiredAt = retiredAt
    }
}
