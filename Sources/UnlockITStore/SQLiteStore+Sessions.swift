import Foundation
import GRDB
import UnlockITCore

extension SQLiteStore {
    public func createSession(
        _ session: Session, verifiedHash: String?, spending idToken: SpentIDToken?, audit: (@Sendable (User) -> AuditEvent)?
    ) async throws -> User {
        try await auditedWrite { db in
            guard let record = try UserRecord.fetchOne(db, key: session.userID.rawValue) else { throw StoreError.credentialsChanged }
            if let verifiedHash, record.passwordHash != verifiedHash { throw StoreError.credentialsChanged }
            guard record.enabled else { throw StoreError.userDisabled }
            if let idToken {
                // The digest is the table's key: a token recorded before inserts nothing, and the
                // throw rolls the whole transaction back, session and all.
                try db.execute(
                    sql: #"INSERT INTO "spentIDToken" (digest, keptUntil) VALUES (?, ?) ON CONFLICT DO NOTHING"#,
                    arguments: [Data(idToken.digest), idToken.keptUntil])
                guard db.changesCount == 1 else { throw StoreError.idTokenSpent }
                if let identity = idToken.identity { try Self.link(record.id, to: identity, at: session.createdAt, db) }
            }
            try SessionRecord(session).insert(db)
            if let audit { try insertAudit(audit(record.user), db) }
            return record.user
        }
    }

    /// Links the user to `identity` if they have no account at its issuer yet; throws
    /// ``StoreError/identityMismatch`` if they have another, or the account is another user's.
    private static func link(_ user: String, to identity: OIDCIdentity, at date: Date, _ db: Database) throws {
        let linked = try String.fetchOne(
            db, sql: #"SELECT subject FROM "oidcIdentity" WHERE userId = ? AND issuer = ?"#, arguments: [user, identity.issuer])
        if let linked {
            guard linked == identity.subject else { throw StoreError.identityMismatch }
            return
        }
        try db.execute(
            sql: #"INSERT INTO "oidcIdentity" (userId, issuer, subject, linkedAt) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"#,
            arguments: [user, identity.issuer, identity.subject, date])
        guard db.changesCount == 1 else { throw StoreError.identityMismatch }
    }

    public func session(tokenHash: [UInt8]) async throws -> (session: Session, user: User)? {
        // On every authenticated request: one statement, prepared once, read by column position
        // straight from SQLite's row.
        try readStatement(.session) { statement in
            try statement.firstRow([.blob(tokenHash)]) { row in
                let user = User(
                    id: UserID(unchecked: try row.text(3)), companyID: CompanyID(unchecked: try row.text(4)), email: try row.text(5),
                    name: try row.text(6), role: Role(rawValue: try row.text(7)) ?? .employee, securityLevel: try row.integer(8),
                    enabled: try row.bool(9), mustChangePassword: try row.bool(10), createdAt: try row.date(11), updatedAt: try row.date(12))
                let session = Session(
                    tokenHash: tokenHash, userID: user.id, createdAt: try row.date(0), expiresAt: try row.date(1),
                    revokedAt: try row.optionalDate(2))
                return (session, user)
            }
        }
    }

    /// ``session(tokenHash:)``'s statement; its columns are read by position.
    static let sessionSQL = #"""
        SELECT s.createdAt, s.expiresAt, s.revokedAt,
               u.id, u.companyId, u.email, u.name, u.role, u.securityLevel, u.enabled, u.mustChangePassword, u.createdAt, u.updatedAt
        FROM "session" s JOIN "user" u ON u.id = s.userId WHERE s.tokenHash = ?
        """#

    public func revokeSession(tokenHash: [UInt8], at: Date, audit: AuditEvent?) async throws {
        try await auditedWrite { db in
            try db.execute(
                sql: #"UPDATE "session" SET revokedAt = ? WHERE tokenHash = ? AND revokedAt IS NULL"#, arguments: [at, Data(tokenHash)])
            // Only a revocation is a sign-out: a session another change ended first (a password reset
            // while this request was under way, or a second sign-out of the same token) logs nothing.
            if let audit, db.changesCount == 1 { try insertAudit(audit, db) }
        }
    }

    public func verifyAdmin(_ check: AdminCheck) async throws {
        try read { db in try Self.require(check, db) }
    }

    /// Deletes sessions that expired before `date`; they can never be used again.
    public func purgeSessions(expiredBefore date: Date) async throws -> Int {
        try write { db in
            try SessionRecord.filter(Column("expiresAt") < date).deleteAll(db)
        }
    }

    public func purgeSpentIDTokens(keptUntilBefore date: Date) async throws -> Int {
        try write { db in
            try db.execute(sql: #"DELETE FROM "spentIDToken" WHERE keptUntil < ?"#, arguments: [date])
            return db.changesCount
        }
    }
}
