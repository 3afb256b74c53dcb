import Foundation
import GRDB
import UnlockITCore

/// The schema, as named migrations. Append only: a migration that has shipped is never edited;
/// a change is a new migration below the last one.
enum Migrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: companies, users, rooms, locks, sessions, audit") { db in
            try db.create(table: "company") { t in
                t.primaryKey("id", .text)
                t.column("name", .text).notNull()
                t.column("createdAt", .datetime).notNull()
            }

            try db.create(table: "user") { t in
                t.primaryKey("id", .text)
                t.belongsTo("company", onDelete: .cascade).notNull()
                t.column("email", .text).notNull().unique()
                t.column("name", .text).notNull()
                t.column("role", .text).notNull().check { ["admin", "employee"].contains($0) }
                t.column("securityLevel", .integer).notNull().check { $0 >= 0 }
                t.column("enabled", .boolean).notNull()
                t.column("passwordHash", .text)
                t.column("mustChangePassword", .boolean).notNull()
                t.column("createdAt", .datetime).notNull()
                t.column("updatedAt", .datetime).notNull()
            }

            try db.create(table: "room") { t in
                t.primaryKey("id", .text)
                t.belongsTo("company", onDelete: .cascade).notNull()
                // Unique per company regardless of case: "Lab" and "lab" would be one room to a person.
                t.column("name", .text).notNull().collate(.nocase)
                t.column("description", .text).notNull()
                t.column("type", .text).notNull().check { ["office", "meeting", "silent", "cafeteria", "other"].contains($0) }
                t.column("bookable", .boolean).notNull()
                t.column("requiredLevel", .integer).check { $0 == nil || $0 >= 0 }
                t.column("createdAt", .datetime).notNull()
                t.column("updatedAt", .datetime).notNull()
                t.uniqueKey(["companyId", "name"])
            }

            try db.create(table: "roomAuthorization") { t in
                t.belongsTo("room", onDelete: .cascade).notNull()
                t.belongsTo("user", onDelete: .cascade).notNull()
                t.primaryKey(["roomId", "userId"])
            }

            try db.create(table: "lock") { t in
                t.primaryKey("id", .text)
                t.belongsTo("company", onDelete: .cascade).notNull()
                t.belongsTo("room", onDelete: .setNull)
                t.column("name", .text).notNull()
                t.column("state", .text).notNull().check { ["registered", "active", "retired"].contains($0) }
                t.column("online", .boolean).notNull()
                t.column("lastSeen", .datetime)
                t.column("firmwareVersion", .text)
                // AES-256-GCM(master key, device key); the master key never enters the database.
                t.column("sealedKey", .blob)
                t.column("createdAt", .datetime).notNull()
                t.column("activatedAt", .datetime)
                t.column("retiredAt", .datetime)
            }

            try db.create(table: "session") { t in
                // SHA-256 of the bearer token: the token itself is never stored.
                t.primaryKey("tokenHash", .blob)
                t.belongsTo("user", onDelete: .cascade).notNull()
                t.column("createdAt", .datetime).notNull()
                t.column("expiresAt", .datetime).notNull()
                t.column("revokedAt", .datetime)
            }

            try db.create(table: "auditEvent") { t in
                t.autoIncrementedPrimaryKey("id")
                // No foreign keys: the log outlives the users, rooms and locks it mentions.
                t.column("companyId", .text).notNull()
                t.column("at", .datetime).notNull()
                t.column("actorId", .text)
                t.column("action", .text).notNull()
                t.column("lockId", .text)
                t.column("roomId", .text)
                t.column("subjectId", .text)
                t.column("outcome", .text).notNull()
                t.column("reason", .text)
            }
            // Every audit filter of the API is a company prefix plus one column, read newest first by id.
            try db.create(index: "auditEvent_company", on: "auditEvent", columns: ["companyId", "id"])
            try db.create(index: "auditEvent_actor", on: "auditEvent", columns: ["companyId", "actorId", "id"])
            try db.create(index: "auditEvent_subject", on: "auditEvent", columns: ["companyId", "subjectId", "id"])
            try db.create(index: "auditEvent_lock", on: "auditEvent", columns: ["companyId", "lockId", "id"])
            try db.create(index: "auditEvent_room", on: "auditEvent", columns: ["companyId", "roomId", "id"])
            try db.create(index: "auditEvent_outcome", on: "auditEvent", columns: ["companyId", "outcome", "id"])
            try db.create(index: "auditEvent_action", on: "auditEvent", columns: ["companyId", "action", "id"])
            try db.create(index: "auditEvent_time", on: "auditEvent", columns: ["companyId", "at"])
            // The log is append-only, enforced by the database itself.
            try db.execute(
                sql: """
                    CREATE TRIGGER auditEvent_noUpdate BEFORE UPDATE ON auditEvent
                    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
                    CREATE TRIGGER auditEvent_noDelete BEFORE DELETE ON auditEvent
                    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
                    """)
        }
        migrator.registerMigration("v2: server settings") { db in
            try db.create(table: "setting") { t in
                t.primaryKey("name", .text)
                t.column("value", .text).notNull()
            }
        }
        migrator.registerMigration("v3: pending pairing key") { db in
            try db.alter(table: "lock") { t in
                // A pairing's device key (sealed like sealedKey) and the wrapped key the lock sent, held
                // from before the `confirm` until the activation is stored: if the lock's answer is
                // lost, the next attempt can finish the pairing instead of finding the lock stranded.
                t.add(column: "pendingKey", .blob)
                t.add(column: "pendingWrappedKey", .blob)
            }
        }
        migrator.registerMigration("v4: room names unique by Unicode case folding") { db in
            // v1's unique key compares names with NOCASE, which folds ASCII letters only: "Mødelokale"
            // and "MØDELOKALE" could both exist. `nameKey` is `RoomName.key(name)`, unique per company.
            // A room that already shares its key with an older room of the company keeps a NULL key
            // (which the index lets through) until it is renamed: nothing is renamed behind an admin's back.
            try db.alter(table: "room") { t in t.add(column: "nameKey", .text) }
            var taken: Set<[String]> = []
            let rows = try Row.fetchAll(db, sql: "SELECT id, companyId, name FROM room ORDER BY createdAt, id")
            for row in rows {
                let company: String = row["companyId"]
                let key = RoomName.key(row["name"])
                guard taken.insert([company, key]).inserted else { continue }
                try db.execute(sql: "UPDATE room SET nameKey = ? WHERE id = ?", arguments: [key, row["id"] as String])
            }
            try db.create(index: "room_companyNameKey", on: "room", columns: ["companyId", "nameKey"], unique: true)
        }
        migrator.registerMigration("v5: email addresses in Unicode's composed form") { db in
            // Addresses are now stored and looked up in NFC (`Validation.email`); one stored with e and a
            // combining accent would no longer be found. An address whose composed form another user
            // already has (a twin the byte comparison let in) stays as it is until an admin changes it.
            // Compared by code points, as SQLite compares them (Swift's == would call the forms equal).
            let rows = try Row.fetchAll(db, sql: "SELECT id, email FROM user ORDER BY createdAt, id")
            var taken = Set(rows.map { Array(($0["email"] as String).unicodeScalars) })
            for row in rows {
                let composed = (row["email"] as String).precomposedStringWithCanonicalMapping
                guard taken.insert(Array(composed.unicodeScalars)).inserted else { continue }
                try db.execute(sql: "UPDATE user SET email = ? WHERE id = ?", arguments: [composed, row["id"] as String])
            }
        }
        migrator.registerMigration("v6: spent ID tokens") { db in
            // The OpenID Connect ID tokens that signed someone in (`SpentIDToken`), until they expire.
            try db.create(table: "spentIDToken", options: .withoutRowID) { t in
                t.primaryKey("digest", .blob)
                t.column("keptUntil", .datetime).notNull()
            }
            try db.create(index: "spentIDToken_keptUntil", on: "spentIDToken", columns: ["keptUntil"])
        }
        migrator.registerMigration("v7: what an admin change set, in its audit event") { db in
            // JSON (``AuditChange``s); NULL for every event before it, and for those that set nothing.
            try db.alter(table: "auditEvent") { t in t.add(column: "changes", .text) }
        }
        migrator.registerMigration("v8: since when a lock holds its device id") { db in
            // ``LockIDClaim/heldSince``: a lock not in service keeps its device id from other companies
            // only for a while after it. Until now: the registration, or the retirement of a lock
            // that had been activated.
            try db.alter(table: "lock") { t in t.add(column: "heldSince", .datetime) }
            try db.execute(
                sql: #"UPDATE "lock" SET heldSince = CASE WHEN retiredAt IS NOT NULL AND activatedAt IS NOT NULL THEN retiredAt ELSE createdAt END"#)
        }
        migrator.registerMigration("v9: device ids the operator released to a company") { db in
            // ``SQLiteStore/releaseLock(_:from:reservingFor:at:)``: kept for that company as a
            // registration not in service would be, for the lapse, counted from `since`.
            try db.create(table: "lockIDReservation") { t in
                t.primaryKey("lockId", .text)
                t.column("companyId", .text).notNull().references("company", onDelete: .cascade)
                t.column("since", .datetime).notNull()
            }
        }
        migrator.registerMigration("v10: audit events numbered per company") { db in
            // The row id counts every company's events, so the ids of one company's events told it how
            // many events the others had between them, and when. The API shows `number` instead: 1, 2,
            // 3… in each company's log, in the order of the row ids. The log stays append-only; its
            // trigger steps aside for the numbering of the events already there.
            try db.execute(sql: "DROP TRIGGER auditEvent_noUpdate")
            try db.alter(table: "auditEvent") { t in t.add(column: "number", .integer).notNull().defaults(to: 0) }
            try db.execute(
                sql: """
                    UPDATE auditEvent SET number = numbered.number
                    FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY companyId ORDER BY id) AS number FROM auditEvent) AS numbered
                    WHERE numbered.id = auditEvent.id;
                    CREATE TRIGGER auditEvent_noUpdate BEFORE UPDATE ON auditEvent
                    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
                    """)
            // It orders a company's log as (companyId, id) did, so it takes that index's place, and the
            // audit write on the unlock path keeps as many indexes up to date as before.
            try db.create(index: "auditEvent_number", on: "auditEvent", columns: ["companyId", "number"], unique: true)
            try db.drop(index: "auditEvent_company")
        }
        migrator.registerMigration("v11: users' accounts at OpenID Connect issuers") { db in
            // ``OIDCIdentity``: the account a user first signed in with at each issuer, the only one
            // that signs them in there after. An account is one user's at most.
            try db.create(table: "oidcIdentity") { t in
                t.column("userId", .text).notNull().references("user", onDelete: .cascade)
                t.column("issuer", .text).notNull()
                t.column("subject", .text).notNull()
                t.column("linkedAt", .datetime).notNull()
                t.primaryKey(["userId", "issuer"])
                t.uniqueKey(["issuer", "subject"])
            }
        }
        return migrator
    }
}
