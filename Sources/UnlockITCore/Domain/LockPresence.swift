import Foundation

/// What the broker tells about a lock's connection.
public struct LockPresence: Sendable, Equatable {
    public var lock: LockID
    public var online: Bool
    public var lastSeen: Date
    public var firmwareVersion: String?

    public init(lock: LockID, online: Bool, lastSeen: Date, firmwareVersion: String?) {
        self.lock = lock
        self.online = online
        self.lastSeen = lastSeen
        self.firmwareVersion = firmwareVersion
    }
}
