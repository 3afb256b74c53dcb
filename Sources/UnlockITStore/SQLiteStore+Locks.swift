import Foundation
import GRDB
import UnlockITCore

extension SQLiteStore {
    public func lockIDHolder(_ id: LockID, for company: CompanyID, lapsedBefore: Date) async throws -> LockIDHolder? {
        try read { db in
            guard let existing = try LockRecord.fetchOne(db, key: id.rawValue) else {
                return try Self.reservation(of: id, keepsItFrom: company, lapsedBefore: lapsedBefore, db) ? .otherCompany : nil
            }
            guard existing.claim.isKept(from: company, lapsedBefore: lapsedBefore) else { return nil }
            return existing.companyId == company.rawValue ? .sameCompany : .otherCompany
        }
    }

    /// Whether the operator released `id` to a company other than `company` at `lapsedBefore` or
    /// later (``releaseLock(_:from:reservingFor:at:)``), as ``LockIDClaim/isKept(from:lapsedBefore:)``
    /// counts a lock's hold.
    private static func reservation(of id: LockID, keepsItFrom company: CompanyID, lapsedBefore: Date, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db, sql: #"SELECT 1 FROM lockIDReservation WHERE lockId = ? AND companyId <> ? AND since >= ?"#,
            arguments: [id.rawValue, company.rawValue, lapsedBefore]) ?? false
    }

    /// The company the operator released `id` to, however long ago, and when.
    private static func reservation(of id: LockID, _ db: Database) throws -> (company: String, since: Date)? {
        try Row.fetchOne(db, sql: #"SELECT companyId, since FROM lockIDReservation WHERE lockId = ?"#, arguments: [id.rawValue]).map {
            ($0["companyId"], $0["since"])
        }
    }

    public func releaseLapsedLock(_ id: LockID, for company: CompanyID, lapsedBefore: Date, at: Date, checking admin: AdminCheck?) async throws
        -> Bool
    {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            if try Self.reservation(of: id, keepsItFrom: company, lapsedBefore: lapsedBefore, db) { throw StoreError.lockIDTaken }
            // Lapsed, when it is another company's.
            try db.execute(
                sql: #"DELETE FROM lockIDReservation WHERE lockId = ? AND companyId <> ?"#, arguments: [id.rawValue, company.rawValue])
            guard let existing = try LockRecord.fetchOne(db, key: id.rawValue) else { return false }
            guard !existing.claim.isKept(from: company, lapsedBefore: lapsedBefore) else { throw StoreError.lockIDTaken }
            // The company's own retired lock is taken over by ``createLock(_:checking:audit:)``, which keeps its life in one row.
            guard existing.companyId != company.rawValue else { return false }
            try release(id, existing, reason: .registeredElsewhere, at: at, db)
            return true
        }
    }

    /// The lock of this device id, whichever company's (``Store/lockOfAnyCompany(_:)``): the
    /// operator's view, before ``releaseLock(_:from:reservingFor:at:)``, and the server's when a
    /// lock's broker account floods its topics.
    public func lockOfAnyCompany(_ id: LockID) async throws -> Lock? {
        try read { db in try LockRecord.fetchOne(db, key: id.rawValue)?.lock }
    }

    /// The operator's way out of a dispute over a device id (`unlockit-server release-lock`): the
    /// lock of `id`, if it is `holder`'s (checked in the transaction: not another lock that took the
    /// id since the operator looked), whatever its state, is deleted, with a ``AuditAction/releaseLock``
    /// event, reason ``AuditReason/releasedByOperator`` and no actor, in `holder`'s log. With
    /// `reservingFor`, the id is kept for that company from other companies (`holder` among them) as
    /// a registration not in service would be, for the lapse from `at`, until it registers the id,
    /// with a `reserve_lock_id` event, reason ``AuditReason/releasedToCompany``, in that company's log.
    /// Returns the lock released, or `nil` when `holder` has no lock of the id. Not part of
    /// ``Store``: no request of the API deletes across companies.
    public func releaseLock(_ id: LockID, from holder: CompanyID, reservingFor company: CompanyID?, at: Date) async throws -> Lock? {
        try await auditedWrite { db in
            guard let existing = try LockRecord.fetchOne(db, key: id.rawValue), existing.companyId == holder.rawValue else { return nil }
            try release(id, existing, reason: .releasedByOperator, at: at, db)
            if let company, company != holder {
                try db.execute(
                    sql: #"INSERT OR REPLACE INTO lockIDReservation (lockId, companyId, since) VALUES (?, ?, ?)"#,
                    arguments: [id.rawValue, company.rawValue, at])
                // Its admins learn it from their own log, which names neither the holder nor its lock.
                try self.insertAudit(
                    AuditEvent(
                        companyID: company, at: at, actorID: nil, action: .reserveLockID, lockID: id, outcome: .success,
                        reason: AuditReason.releasedToCompany.rawValue), db)
            }
            return existing.lock
        }
    }

    /// Deletes lock `id`'s row, with a `release_lock` event of no actor in its company's log.
    private func release(_ id: LockID, _ existing: LockRecord, reason: AuditReason, at: Date, _ db: Database) throws {
        try existing.delete(db)
        try self.insertAudit(
            AuditEvent(
                companyID: CompanyID(unchecked: existing.companyId), at: at, actorID: nil, action: .releaseLock,
                lockID: id, roomID: existing.roomId.map(RoomID.init(unchecked:)), outcome: .success,
                reason: reason.rawValue), db)
    }

    public func createLock(_ lock: Lock, checking admin: AdminCheck?, audit: AuditEvent?) async throws {
        let write = { (db: Database) in
            if let admin { try Self.require(admin, db) }
            let existing = try LockRecord.fetchOne(db, key: lock.id.rawValue)
            // Only the company's own retired lock gives its row up here; another's is released first.
            if let existing, existing.companyId != lock.companyID.rawValue || existing.state != LockState.retired.rawValue {
                throw StoreError.lockIDTaken
            }
            // Released by the operator: to another company, kept (its lapse is for releaseLapsedLock
            // to find); to this one, taken up.
            let reserved = try Self.reservation(of: lock.id, db)
            if let reserved {
                guard reserved.company == lock.companyID.rawValue else { throw StoreError.lockIDTaken }
                try db.execute(sql: #"DELETE FROM lockIDReservation WHERE lockId = ?"#, arguments: [lock.id.rawValue])
            }
            if let room = lock.roomID, try !Self.roomExists(room, in: lock.companyID, db) { throw StoreError.notFound }
            // A retired lock's row is taken over whole: no key, pending pairing, presence or date of
            // its earlier life survives in it, but the date since which it has held the id when it was
            // never activated: retiring and registering again does not restart the lapse.
            var record = LockRecord(lock)
            if let existing, existing.activatedAt == nil { record.heldSince = existing.heldSince ?? existing.createdAt }
            // Taking an id up does not restart its hold: the lapse counts from the release.
            if let reserved { record.heldSince = reserved.since }
            try record.save(db)
            guard let audit else { return }
            if let retired = existing?.lock {
                // The event records what it was (the dates are those of its own register and retire events).
                try self.insertAudit(
                    audit,
                    recording: [AuditChange(field: "state", from: retired.state.rawValue, to: lock.state.rawValue)]
                        + AuditChange.between(retired, lock), db)
            } else {
                try self.insertAudit(audit, db)
            }
        }
        if audit == nil { try self.write(write) } else { try await auditedWrite(write) }
    }

    public func lock(_ id: LockID, in company: CompanyID) async throws -> Lock? {
        try read { db in
            try LockRecord.filter(Column("id") == id.rawValue && Column("companyId") == company.rawValue).fetchOne(db)?.lock
        }
    }

    public func locks(in company: CompanyID) async throws -> [Lock] {
        try read { db in
            try LockRecord.filter(Column("companyId") == company.rawValue).order(Column("name"), Column("id")).fetchAll(db).compactMap(\.lock)
        }
    }

    public func unlockContext(_ id: LockID, in company: CompanyID, for user: UserID) async throws -> (
        lock: Lock, room: Room?, sealedKey: [UInt8]?
    )? {
        // On every unlock: one statement, prepared once, outside a transaction, read by column
        // position straight from SQLite's row (no intermediate copy).
        try readStatement(.unlockContext) { statement in
            try statement.firstRow([.text(user.rawValue), .text(id.rawValue), .text(company.rawValue)]) { row in
                let lock = Lock(
                    id: id, companyID: company, roomID: try row.optionalText(0).map(RoomID.init(unchecked:)), name: try row.text(1),
                    state: LockState(rawValue: try row.text(2)) ?? .retired, online: try row.bool(3), lastSeen: try row.optionalDate(4),
                    firmwareVersion: try row.optionalText(5), createdAt: try row.date(7), activatedAt: try row.optionalDate(8),
                    retiredAt: try row.optionalDate(9))
                let room = try row.optionalText(10).map { roomID in
                    Room(
                        id: RoomID(unchecked: roomID), companyID: company, name: try row.text(11), description: try row.text(12),
                        type: RoomType(rawValue: try row.text(13)) ?? .other, bookable: try row.bool(14), requiredLevel: try row.optionalInteger(15),
                        authorizedUsers: try row.bool(18) ? [user] : [], createdAt: try row.date(16), updatedAt: try row.date(17))
                }
                return (lock, room, try row.optionalBlob(6))
            }
        }
    }

    /// ``unlockContext(_:in:for:)``'s statement; its columns are read by position.
    static let unlockContextSQL = #"""
        SELECT l.roomId, l.name, l.state, l.online, l.lastSeen, l.firmwareVersion, l.sealedKey, l.createdAt, l.activatedAt,
               l.retiredAt,
               r.id, r.name, r.description, r.type, r.bookable, r.requiredLevel, r.createdAt, r.updatedAt,
               EXISTS (SELECT 1 FROM roomAuthorization a WHERE a.roomId = r.id AND a.userId = ?)
        FROM "lock" l LEFT JOIN room r ON r.id = l.roomId AND r.companyId = l.companyId
        WHERE l.id = ? AND l.companyId = ?
        """#

    public func activateLock(
        _ id: LockID, in company: CompanyID, sealedKey: [UInt8], at: Date, checking admin: AdminCheck?, audit: AuditEvent
    ) async throws {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            guard var record = try LockRecord.filter(Column("id") == id.rawValue && Column("companyId") == company.rawValue).fetchOne(db) else {
                throw StoreError.notFound
            }
            // Re-pairing an active lock (after a factory reset) replaces its key; a retired lock stays retired.
            guard record.state != LockState.retired.rawValue else { throw StoreError.lockRetired }
            record.state = LockState.active.rawValue
            record.sealedKey = Data(sealedKey)
            record.pendingKey = nil
            record.pendingWrappedKey = nil
            record.activatedAt = at
            try record.update(db)
            try self.insertAudit(audit, db)
        }
    }

    public func holdPendingKey(_ id: LockID, in company: CompanyID, sealedKey: [UInt8], wrappedKey: [UInt8]) async throws {
        try write { db in
            guard var record = try LockRecord.filter(Column("id") == id.rawValue && Column("companyId") == company.rawValue).fetchOne(db) else {
                throw StoreError.notFound
            }
            guard record.state != LockState.retired.rawValue else { throw StoreError.lockRetired }
            record.pendingKey = Data(sealedKey)
            record.pendingWrappedKey = Data(wrappedKey)
            try record.update(db)
        }
    }

    public func pendingKey(_ id: LockID, in company: CompanyID) async throws -> (sealedKey: [UInt8], wrappedKey: [UInt8])? {
        try read { db in
            guard let record = try LockRecord.filter(Column("id") == id.rawValue && Column("companyId") == company.rawValue).fetchOne(db),
                let sealed = record.pendingKey, let wrapped = record.pendingWrappedKey
            else { return nil }
            return (Array(sealed), Array(wrapped))
        }
    }

    public func retireLock(_ id: LockID, in company: CompanyID, at: Date, audit: AuditEvent) async throws {
        try await auditedWrite { db in
            guard var record = try LockRecord.filter(Column("id") == id.rawValue && Column("companyId") == company.rawValue).fetchOne(db) else {
                throw StoreError.notFound
            }
            guard record.state != LockState.retired.rawValue else { throw StoreError.lockRetired }
            // The key is destroyed with the lock's service life: a retired lock can never be opened again.
            record.state = LockState.retired.rawValue
            record.sealedKey = nil
            record.pendingKey = nil
            record.pendingWrappedKey = nil
            record.retiredAt = at
            // Out of service: from now on its id is kept from other companies only for the lapse.
            // One never activated goes on holding it since its registration.
            if record.activatedAt != nil { record.heldSince = at }
            record.online = false
            try record.update(db)
            try self.insertAudit(audit, db)
        }
    }

    public func updateLock(
        _ id: LockID, in company: CompanyID, name: String?, room: RoomID?, checking admin: AdminCheck?, audit: AuditEvent
    ) async throws -> Lock {
        try await auditedWrite { db in
            if let admin { try Self.require(admin, db) }
            guard var record = try LockRecord.filter(Column("id") == id.rawValue && Column("companyId") == company.rawValue).fetchOne(db),
                let before = record.lock
            else { throw StoreError.notFound }
            guard record.state != LockState.retired.rawValue else { throw StoreError.lockRetired }
            if let room {
                guard try Self.roomExists(room, in: company, db) else { throw StoreError.roomNotFound }
                record.roomId = room.rawValue
            }
            if let name { record.name = name }
            guard let after = record.lock else { throw StoreError.notFound }
            // A change that changes nothing writes nothing, and no event.
            let changes = AuditChange.between(before, after)
            guard !changes.isEmpty else { return before }
            // Only these two: the presence columns belong to the gateway's writes.
            try db.execute(sql: #"UPDATE "lock" SET name = ?, roomId = ? WHERE id = ?"#, arguments: [record.name, record.roomId, record.id])
            var event = audit
            event.roomID = after.roomID
            try self.insertAudit(event, recording: changes, db)
            return after
        }
    }

    public func recordPresence(_ updates: [LockPresence]) async throws {
        guard !updates.isEmpty else { return }
        try write { db in
            // Not into a row registered after the presence was seen: a lock registered by another
            // company once the old one was released must not show the old device's.
            let statement = try db.cachedStatement(
                sql: #"""
                    UPDATE "lock" SET online = ?, lastSeen = ?, firmwareVersion = COALESCE(?, firmwareVersion)
                    WHERE id = ? AND state != 'retired' AND createdAt <= ?
                    """#
            )
            for update in updates {
                try statement.execute(arguments: [update.online, update.lastSeen, update.firmwareVersion, update.lock.rawValue, update.lastSeen])
            }
        }
    }
}
