import Foundation

/// A signed-in session. The bearer token itself is never stored: only its SHA-256.
public struct Session: Sendable, Equatable {
    public var tokenHash: [UInt8]
    public var userID: UserID
    public var createdAt: Date
    public var expiresAt: Date
    public var revokedAt: Date?

    public init(tokenHash: [UInt8], userID: UserID, createdAt: Date, expiresAt: Date, revokedAt: Date? = nil) {
        self.tokenHash = tokenHash
        self.userID = userID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
    }

    public func isValid(at now: Date) -> Bool { revokedAt == nil && now < expiresAt }
}
