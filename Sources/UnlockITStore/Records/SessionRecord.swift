import Foundation
import GRDB
import UnlockITCore

struct SessionRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "session"
    var tokenHash: Data
    var userId: String
    var createdAt: Date
    var expiresAt: Date
    var revokedAt: Date?

    init(_ session: Session) {
        tokenHash = Data(session.tokenHash)
        userId = session.userID.rawValue
        createdAt = session.createdAt
        expiresAt = session.expiresAt
        revokedAt = session.revokedAt
    }

    var session: Session {
        Session(
            tokenHash: Array(tokenHash), userID: UserID(unchecked: userId), createdAt: createdAt, expiresAt: expiresAt, revokedAt: revokedAt)
    }
}
