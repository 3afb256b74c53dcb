import Foundation
import GRDB
import UnlockITCore

extension SQLiteStore {
    public func createCompany(_ company: Company, admin: User, passwordHash: String, audit: AuditEvent) async throws {
        try await auditedWrite { db in
            guard try UserRecord.filter(Column("email") == admin.email).fetchCount(db) == 0 else { throw StoreError.emailTaken }
            try CompanyRecord(company).insert(db)
            try UserRecord(admin, passwordHash: passwordHash).insert(db)
            try self.insertAudit(audit, recording: AuditChange.created(admin), db)
        }
    }

    public func company(_ id: CompanyID) async throws -> Company? {
        try read { db in try CompanyRecord.fetchOne(db, key: id.rawValue)?.company }
    }

    public func createUser(_ user: User, passwordHash: String?, checking admin: AdminCheck?, audit: AuditEvent) async throws {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            guard try UserRecord.filter(Column("email") == user.email).fetchCount(db) == 0 else { throw StoreError.emailTaken }
            try UserRecord(user, passwordHash: passwordHash).insert(db)
            try self.insertAudit(audit, recording: AuditChange.created(user), db)
        }
    }

    public func createUsers(_ users: [(user: User, passwordHash: String?, audit: AuditEvent)], checking admin: AdminCheck?) async throws {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            for (user, hash, audit) in users {
                guard try UserRecord.filter(Column("email") == user.email).fetchCount(db) == 0 else { throw StoreError.emailTaken }
                try UserRecord(user, passwordHash: hash).insert(db)
                try self.insertAudit(audit, recording: AuditChange.created(user), db)
            }
        }
    }

    public func user(_ id: UserID) async throws -> User? {
        try read { db in try UserRecord.fetchOne(db, key: id.rawValue)?.user }
    }

    public func user(_ id: UserID, in company: CompanyID) async throws -> User? {
        try read { db in
            try UserRecord.filter(Column("id") == id.rawValue && Column("companyId") == company.rawValue).fetchOne(db)?.user
        }
    }

    public func credentials(email: String) async throws -> (user: User, passwordHash: String?)? {
        try read { db in
            guard let record = try UserRecord.filter(Column("email") == email).fetchOne(db) else { return nil }
            return (record.user, record.passwordHash)
        }
    }

    public func users(in company: CompanyID) async throws -> [User] {
        try read { db in
            try UserRecord.filter(Column("companyId") == company.rawValue).order(Column("email")).fetchAll(db).map(\.user)
        }
    }

    public func updateUser(
        _ id: UserID, in company: CompanyID, checking admin: AdminCheck?, audit: AuditEvent, change: (inout User) throws -> Void
    ) async throws -> User {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            guard var record = try UserRecord.filter(Column("id") == id.rawValue && Column("companyId") == company.rawValue).fetchOne(db)
            else { throw StoreError.notFound }
            let before = record.user
            var user = before
            try change(&user)
            // A change that changes nothing writes nothing: no event, no new updatedAt.
            let changes = AuditChange.between(before, user)
            guard !changes.isEmpty else { return before }
            if record.email != user.email {
                guard try UserRecord.filter(Column("email") == user.email).fetchCount(db) == 0 else { throw StoreError.emailTaken }
            }
            if !record.enabled && user.enabled {
                // Re-enabled: the sessions from before the user was disabled stay dead (a token that
                // leaked then must not come back to life); the user signs in again.
                try db.execute(
                    sql: #"UPDATE "session" SET revokedAt = ? WHERE userId = ? AND revokedAt IS NULL"#, arguments: [user.updatedAt, id.rawValue])
            }
            record.email = user.email
            record.name = user.name
            record.role = user.role.rawValue
            record.securityLevel = user.securityLevel
            record.enabled = user.enabled
            record.updatedAt = user.updatedAt
            try record.update(db)
            try Self.requireAnAdmin(in: company, db)
            try self.insertAudit(audit, recording: changes, db)
            return record.user
        }
    }

    public func deleteUser(_ id: UserID, in company: CompanyID, checking admin: AdminCheck?, audit: AuditEvent) async throws {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            guard let record = try UserRecord.filter(Column("id") == id.rawValue && Column("companyId") == company.rawValue).fetchOne(db) else {
                throw StoreError.notFound
            }
            try record.delete(db)
            try Self.requireAnAdmin(in: company, db)
            try self.insertAudit(audit, recording: AuditChange.deleted(record.user), db)
        }
    }

    public func setPassword(
        _ id: UserID, in company: CompanyID, hash: String, mustChange: Bool, keepSession: [UInt8]?, replacing: String?,
        checking admin: AdminCheck?, audit: AuditEvent
    ) async throws {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            // The stored hash: nil for no such user, .some(nil) for one without a password.
            let stored: String?? = try Row.fetchOne(
                db, sql: #"SELECT passwordHash FROM "user" WHERE id = ? AND companyId = ?"#, arguments: [id.rawValue, company.rawValue]
            ).map { row -> String? in row[0] }
            if let replacing {
                guard stored == replacing else { throw StoreError.credentialsChanged }
            } else if case .some(.none) = stored {
                // An admin's reset of a user who signs in with OpenID Connect only would give them a
                // password their identity provider knows nothing of: a way in around it.
                throw StoreError.noPassword
            }
            try db.execute(
                sql: #"UPDATE "user" SET passwordHash = ?, mustChangePassword = ?, updatedAt = ? WHERE id = ? AND companyId = ?"#,
                arguments: [hash, mustChange, audit.at, id.rawValue, company.rawValue])
            guard db.changesCount == 1 else { throw StoreError.notFound }
            // A new password ends every other session: whoever knew the old one is signed out.
            try db.execute(
                sql: #"UPDATE "session" SET revokedAt = ? WHERE userId = ? AND revokedAt IS NULL AND tokenHash IS NOT ?"#,
                arguments: [audit.at, id.rawValue, keepSession.map { Data($0) }])
            try self.insertAudit(audit, db)
        }
    }

    public func identities(of id: UserID, in company: CompanyID) async throws -> [OIDCIdentity] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: #"""
                    SELECT i.issuer, i.subject FROM "oidcIdentity" i JOIN "user" u ON u.id = i.userId
                    WHERE i.userId = ? AND u.companyId = ? ORDER BY i.issuer
                    """#,
                arguments: [id.rawValue, company.rawValue]
            ).map { OIDCIdentity(issuer: $0[0], subject: $0[1]) }
        }
    }

    public func unlinkIdentities(of id: UserID, in company: CompanyID, checking admin: AdminCheck?, audit: AuditEvent) async throws -> Int {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            guard try UserRecord.filter(Column("id") == id.rawValue && Column("companyId") == company.rawValue).fetchCount(db) == 1 else {
                throw StoreError.notFound
            }
            try db.execute(sql: #"DELETE FROM "oidcIdentity" WHERE userId = ?"#, arguments: [id.rawValue])
            let count = db.changesCount
            if count > 0 { try self.insertAudit(audit, db) }
            return count
        }
    }

    public func rehashPassword(_ id: UserID, hash: String, replacing: String) async throws -> Bool {
        try write { db in
            try db.execute(
                sql: #"UPDATE "user" SET passwordHash = ? WHERE id = ? AND passwordHash = ?"#, arguments: [hash, id.rawValue, replacing])
            return db.changesCount == 1
        }
    }

    /// Throws ``StoreError/sessionEnded`` unless `check`'s session is live and its user enabled, in
    /// `check`'s company, and ``StoreError/adminRequired`` unless that user is an admin.
    static func require(_ check: AdminCheck, _ db: Database) throws {
        let row = try Row.fetchOne(
            db,
            sql: #"""
                SELECT u.role, u.enabled FROM "session" s JOIN "user" u ON u.id = s.userId
                WHERE s.tokenHash = ? AND s.revokedAt IS NULL AND s.expiresAt > ? AND u.companyId = ?
                """#,
            arguments: [Data(check.session), check.at, check.company.rawValue])
        guard let row, row["enabled"] == true else { throw StoreError.sessionEnded }
        guard !check.needsAdmin || row["role"] == Role.admin.rawValue else { throw StoreError.adminRequired }
    }

    /// Throws ``StoreError/lastAdmin`` (rolling back the transaction) if the company has no enabled admin left.
    static func requireAnAdmin(in company: CompanyID, _ db: Database) throws {
        let admins = try UserRecord.filter(
            Column("companyId") == company.rawValue && Column("role") == Role.admin.rawValue && Column("enabled") == true
        ).fetchCount(db)
        guard admins > 0 else { throw StoreError.lastAdmin }
    }
}
