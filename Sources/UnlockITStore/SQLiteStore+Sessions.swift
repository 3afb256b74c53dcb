import Foundation
import GRDB
import UnlockITCore

extension SQLiteStore {
    public func createSession(_ session: Session) async throws {
        try await pool.write { db in try SessionRecord(session).insert(db) }
    }

    public func session(tokenHash: [UInt8]) async throws -> (session: Session, user: User)? {
        try await pool.read { db in
            guard let session = try SessionRecord.fetchOne(db, key: Data(tokenHash)),
                let user = try UserRecord.fetchOne(db, key: session.userId)
            else { return nil }
            return (session.session, user.user)
        }
    }

    public func revokeSession(tokenHash: [UInt8], at: Date) async throws {
        try await pool.write { db in
            try db.execute(
                sql: #"UPDATE "session" SET revokedAt = ? WHERE tokenHash = ? AND revokedAt IS NULL"#, arguments: [at, Data(tokenHash)])
        }
    }

    /// Deletes sessions that expired before `date`; they can never be used again.
    public func purgeSessions(expiredBefore date: Date) async throws -> Int {
        try await pool.write { db in
            try SessionRecord.filter(Column("expiresAt") < date).deleteAll(db)
        }
    }
}
