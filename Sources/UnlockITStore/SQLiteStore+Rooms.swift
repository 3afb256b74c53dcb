import Foundation
import GRDB
import UnlockITCore

extension SQLiteStore {
    public func createRoom(_ room: Room, checking admin: AdminCheck?, audit: AuditEvent) async throws {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            try Self.requireUniqueName(room, db)
            try RoomRecord(room).insert(db)
            try self.insertAudit(audit, recording: AuditChange.created(room), db)
        }
    }

    public func room(_ id: RoomID, in company: CompanyID) async throws -> Room? {
        try read { db in try Self.fetchRoom(id, in: company, db) }
    }

    public func rooms(in company: CompanyID) async throws -> [Room] {
        try read { db in
            try Self.fetchRooms(
                in: company, db,
                authorizations: "SELECT a.roomId, a.userId FROM roomAuthorization a JOIN room r ON r.id = a.roomId WHERE r.companyId = ?",
                [company.rawValue])
        }
    }

    public func rooms(in company: CompanyID, authorizationsOf user: UserID) async throws -> [Room] {
        try read { db in
            try Self.fetchRooms(
                in: company, db,
                authorizations: """
                    SELECT a.roomId, a.userId FROM roomAuthorization a JOIN room r ON r.id = a.roomId
                    WHERE r.companyId = ? AND a.userId = ?
                    """,
                [company.rawValue, user.rawValue])
        }
    }

    /// Whether `room` is one of `company`'s: a room of another company is no room at all to its caller.
    static func roomExists(_ room: RoomID, in company: CompanyID, _ db: Database) throws -> Bool {
        try RoomRecord.filter(Column("id") == room.rawValue && Column("companyId") == company.rawValue).fetchCount(db) == 1
    }

    /// The company's rooms by name, with the authorizations `sql` selects (roomId, userId).
    private static func fetchRooms(in company: CompanyID, _ db: Database, authorizations sql: String, _ arguments: StatementArguments) throws
        -> [Room]
    {
        let records = try RoomRecord.filter(Column("companyId") == company.rawValue).order(Column("name")).fetchAll(db)
        var authorized: [String: Set<UserID>] = [:]
        for row in try Row.fetchAll(db, sql: sql, arguments: arguments) {
            authorized[row["roomId"], default: []].insert(UserID(unchecked: row["userId"]))
        }
        return records.map { $0.room(authorizedUsers: authorized[$0.id] ?? []) }
    }

    public func updateRoom(
        _ id: RoomID, in company: CompanyID, checking admin: AdminCheck?, audit: AuditEvent, change: (inout Room) throws -> Void
    ) async throws -> Room {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            guard let stored = try Self.fetchRoom(id, in: company, db) else { throw StoreError.notFound }
            var room = stored
            try change(&room)
            // Only the editable fields are the change's to set.
            room.id = id
            room.companyID = company
            room.authorizedUsers = stored.authorizedUsers
            room.createdAt = stored.createdAt
            // A change that changes nothing writes nothing: no event, no new updatedAt.
            let changes = AuditChange.between(stored, room)
            guard !changes.isEmpty else { return stored }
            let record = RoomRecord(room)
            if record.nameKey == RoomName.key(stored.name) {
                // The same name to a person (or a change of its case): the key stays as it is, NULL
                // included (see migration v4), so such a room can be edited without renaming it.
                try Self.requireNoNocaseClash(room, db)
                try record.update(db, columns: record.databaseDictionary.keys.filter { $0 != "nameKey" })
            } else {
                try Self.requireUniqueName(room, db)
                try record.update(db)
            }
            try self.insertAudit(audit, recording: changes, db)
            return room
        }
    }

    public func deleteRoom(_ id: RoomID, in company: CompanyID, checking admin: AdminCheck?, audit: AuditEvent) async throws {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            guard let stored = try Self.fetchRoom(id, in: company, db) else { throw StoreError.notFound }
            let liveLocks = try LockRecord.filter(Column("roomId") == id.rawValue && Column("state") != LockState.retired.rawValue).fetchCount(db)
            guard liveLocks == 0 else { throw StoreError.roomHasLocks }
            _ = try RoomRecord.deleteOne(db, key: id.rawValue)
            try self.insertAudit(audit, recording: AuditChange.deleted(stored), db)
        }
    }

    public func setAuthorization(
        user: UserID, room: RoomID, in company: CompanyID, authorized: Bool, checking admin: AdminCheck?, audit: AuditEvent
    ) async throws {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            // Both must be of the caller's company; anything else is reported as missing, the room first.
            guard try Self.roomExists(room, in: company, db) else { throw StoreError.roomNotFound }
            guard try UserRecord.filter(Column("id") == user.rawValue && Column("companyId") == company.rawValue).fetchCount(db) == 1 else {
                throw StoreError.notFound
            }
            let record = RoomAuthorizationRecord(roomId: room.rawValue, userId: user.rawValue)
            if authorized {
                try record.insert(db, onConflict: .ignore)
            } else {
                try record.delete(db)
            }
            // Idempotent, and the log records only what changed: authorizing someone already on
            // the list, or removing someone who is not, writes no event.
            guard db.changesCount == 1 else { return }
            try self.insertAudit(audit, db)
        }
    }

    /// A room with its authorized users; on the path of every unlock, so read by column position.
    static func fetchRoom(_ id: RoomID, in company: CompanyID, _ db: Database) throws -> Room? {
        let roomStatement = try db.cachedStatement(
            sql: "SELECT name, description, type, bookable, requiredLevel, createdAt, updatedAt FROM room WHERE id = ? AND companyId = ?")
        guard let row = try Row.fetchOne(roomStatement, arguments: [id.rawValue, company.rawValue]) else { return nil }
        let usersStatement = try db.cachedStatement(sql: "SELECT userId FROM roomAuthorization WHERE roomId = ?")
        let users = try String.fetchAll(usersStatement, arguments: [id.rawValue])
        return Room(
            id: id, companyID: company, name: row[0], description: row[1], type: RoomType(rawValue: row[2]) ?? .other, bookable: row[3],
            requiredLevel: row[4], authorizedUsers: Set(users.map(UserID.init(unchecked:))), createdAt: row[5], updatedAt: row[6])
    }

    /// Another room of the company with the same name by ``RoomName/key(_:)``, so that a clash is a
    /// 409 and never the unique index's error. The rooms migration v4 left without a key (there are
    /// none in a database created since) are compared by their names' keys: the index does not see
    /// them, and the twin that had their key may have been renamed since. Also covers v1's index on
    /// the name with NOCASE, which folds ASCII letters only: names equal under it have equal keys.
    private static func requireUniqueName(_ room: Room, _ db: Database) throws {
        let key = RoomName.key(room.name)
        let others = RoomRecord.filter(Column("companyId") == room.companyID.rawValue && Column("id") != room.id.rawValue)
        let clash = try others.filter(Column("nameKey") == key).fetchCount(db)
        let unkeyed = try String.fetchAll(db, others.filter(Column("nameKey") == nil).select(Column("name")))
        guard clash == 0, !unkeyed.contains(where: { RoomName.key($0) == key }) else { throw StoreError.roomNameTaken }
    }

    /// Another room of the company with the same name by v1's unique index (NOCASE): possible only
    /// beside a room whose key migration v4 left NULL, renamed to another case of its own name.
    private static func requireNoNocaseClash(_ room: Room, _ db: Database) throws {
        let clash = try RoomRecord.filter(
            Column("companyId") == room.companyID.rawValue && Column("name").collating(.nocase) == room.name && Column("id") != room.id.rawValue
        ).fetchCount(db)
        guard clash == 0 else { throw StoreError.roomNameTaken }
    }
}
