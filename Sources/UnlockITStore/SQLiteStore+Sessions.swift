import Foundation
import GRDB
import UnlockITCore

extension SQLiteStore {
    public func createSession(_ session: Session) async throws {
        try write { db in try SessionRecord(session).insert(db) }
    }

    public func session(tokenHash: [UInt8]) async throws -> (session: Session, user: User)? {
        // On every authenticated request: one statement, prepared once, decoded by column position
        // straight from SQLite's row.
        try readStatements { db in
            let statement = try db.cachedStatement(
                sql: #"""
                    SELECT s.createdAt, s.expiresAt, s.revokedAt,
                           u.id, u.companyId, u.email, u.name, u.role, u.securityLevel, u.enabled, u.mustChangePassword, u.createdAt, u.updatedAt
                    FROM "session" s JOIN "user" u ON u.id = s.userId WHERE s.tokenHash = ?
                    """#)
            let rows = try Row.fetchCursor(statement, arguments: [Data(tokenHash)])
            guard let row = try rows.next() else { return nil }
            let user = User(
                id: UserID(unchecked: row[3]), companyID: CompanyID(unchecked: row[4]), email: row[5], name: row[6],
                role: Role(rawValue: row[7]) ?? .employee, securityLevel: row[8], enabled: row[9], mustChangePassword: row[10],
                createdAt: row[11], updatedAt: row[12])
            let session = Session(tokenHash: tokenHash, userID: user.id, createdAt: row[0], expiresAt: row[1], revokedAt: row[2])
            return (session, user)
        }
    }

    public func revokeSession(tokenHash: [UInt8], at: Date) async throws {
        try write { db in
            try db.execute(
                sql: #"UPDATE "session" SET revokedAt = ? WHERE tokenHash = ? AND revokedAt IS NULL"#, arguments: [at, Data(tokenHash)])
        }
    }

    /// Deletes sessions that expired before `date`; they can never be used again.
    public func purgeSessions(expiredBefore date: Date) async throws -> Int {
        try write { db in
            try SessionRecord.filter(Column("expiresAt") < date).deleteAll(db)
        }
    }
}
