import Foundation
import GRDB
import SiteHarness
import Testing
import UnlockITCore

@testable import UnlockITStore

@Suite struct SQLiteStoreTests {
    let directory: TemporaryDirectory
    let store: SQLiteStore
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    init() throws {
        directory = try TemporaryDirectory("unlockit-store")
        store = try SQLiteStore(path: "\(directory.path)/db/unlockit.sqlite")
    }

    func audit(_ company: CompanyID, _ action: AuditAction = .createUser) -> AuditEvent {
        AuditEvent(companyID: company, at: now, actorID: nil, action: action, outcome: .success)
    }

    func makeUser(_ company: CompanyID, _ email: String, role: Role = .employee, level: Int = 0) -> User {
        User(
            id: .generate(), companyID: company, email: email, name: email, role: role, securityLevel: level, enabled: true,
            mustChangePassword: false, createdAt: now, updatedAt: now)
    }

    /// A company with its admin.
    func makeCompany(_ name: String) async throws -> (Company, User) {
        let company = Company(id: .generate(), name: name, createdAt: now)
        let admin = makeUser(company.id, "admin@\(name.lowercased()).test", role: .admin)
        try await store.createCompany(company, admin: admin, passwordHash: "hash", audit: audit(company.id, .createCompany))
        return (company, admin)
    }

    func makeRoom(_ company: CompanyID, _ name: String) async throws -> Room {
        let room = Room(
            id: .generate(), companyID: company, name: name, description: "", type: .office, bookable: false, requiredLevel: 1,
            authorizedUsers: [], createdAt: now, updatedAt: now)
        try await store.createRoom(room, audit: audit(company, .createRoom))
        return room
    }

    @Test func migrationsAreNamedAndApplied() async throws {
        #expect(
            try await store.appliedMigrations() == [
                "v1: companies, users, rooms, locks, sessions, audit", "v2: server settings", "v3: pending pairing key",
                "v4: room names unique by Unicode case folding", "v5: email addresses in Unicode's composed form", "v6: spent ID tokens",
                "v7: what an admin change set, in its audit event", "v8: since when a lock holds its device id",
                "v9: device ids the operator released to a company", "v10: audit events numbered per company",
                "v11: users' accounts at OpenID Connect issuers",
            ])
        // Reopening an existing file migrates nothing again and keeps the data.
        let (company, _) = try await makeCompany("Reopen")
        let again = try SQLiteStore(path: "\(directory.path)/db/unlockit.sqlite")
        #expect(try await again.company(company.id)?.name == "Reopen")
    }

    @Test func aDatabaseOfANewerVersionIsRefused() throws {
        let path = "\(directory.path)/db/unlockit.sqlite"
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
        }
        #expect(throws: SchemaTooNew(path: path, unknown: ["v99: from the future"])) { _ = try SQLiteStore(path: path) }
    }

    @Test func theDatabaseFileIsPrivate() throws {
        let mode = try FileManager.default.attributesOfItem(atPath: "\(directory.path)/db/unlockit.sqlite")[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
    }

    @Test func companyDataStaysInItsCompany() async throws {
        let (a, adminA) = try await makeCompany("Alpha")
        let (b, _) = try await makeCompany("Beta")
        let roomA = try await makeRoom(a.id, "Lab")
        let lockA = Lock(id: LockID("lock-alpha")!, companyID: a.id, roomID: roomA.id, name: "Door", state: .registered, createdAt: now)
        try await store.createLock(lockA)

        #expect(try await store.user(adminA.id, in: b.id) == nil)
        #expect(try await store.room(roomA.id, in: b.id) == nil)
        #expect(try await store.lock(lockA.id, in: b.id) == nil)
        #expect(try await store.unlockContext(lockA.id, in: b.id, for: adminA.id) == nil)
        #expect(try await store.users(in: b.id).allSatisfy { $0.companyID == b.id })
        #expect(try await store.auditEvents(AuditQuery(companyID: b.id)).allSatisfy { $0.companyID == b.id })

        await #expect(throws: StoreError.notFound) { _ = try await store.updateUser(adminA.id, in: b.id, audit: audit(b.id)) { $0.name = "X" } }
        await #expect(throws: StoreError.notFound) { _ = try await store.updateRoom(roomA.id, in: b.id, audit: audit(b.id)) { $0.name = "X" } }
        await #expect(throws: StoreError.notFound) { try await store.deleteUser(adminA.id, in: b.id, audit: audit(b.id)) }
        await #expect(throws: StoreError.notFound) { try await store.deleteRoom(roomA.id, in: b.id, audit: audit(b.id)) }
        // The room is looked for first, then the user.
        await #expect(throws: StoreError.roomNotFound) {
            try await store.setAuthorization(user: adminA.id, room: roomA.id, in: b.id, authorized: true, audit: audit(b.id))
        }
        let roomB = try await makeRoom(b.id, "Beta lab")
        await #expect(throws: StoreError.notFound) {
            try await store.setAuthorization(user: adminA.id, room: roomB.id, in: b.id, authorized: true, audit: audit(b.id))
        }
        #expect(try await store.room(roomB.id, in: b.id)?.authorizedUsers.isEmpty == true)
        await #expect(throws: StoreError.notFound) { try await store.retireLock(lockA.id, in: b.id, at: now, audit: audit(b.id)) }
        // A lock cannot be placed in another company's room.
        let sneaky = Lock(id: LockID("lock-beta")!, companyID: b.id, roomID: roomA.id, name: "Door", state: .registered, createdAt: now)
        await #expect(throws: StoreError.notFound) { try await store.createLock(sneaky) }
    }

    @Test func aSignOutIsLoggedOnlyWhenItRevokes() async throws {
        let (company, admin) = try await makeCompany("Omicron")
        let token: [UInt8] = Array(repeating: 9, count: 32)
        _ = try await store.createSession(
            Session(tokenHash: token, userID: admin.id, createdAt: now, expiresAt: now.addingTimeInterval(3600)), verifiedHash: nil)
        for _ in 0..<2 { try await store.revokeSession(tokenHash: token, at: now, audit: audit(company.id, .signOut)) }
        // Revoked by something else first (a password reset), then signed out: nothing more to log.
        let other: [UInt8] = Array(repeating: 10, count: 32)
        _ = try await store.createSession(
            Session(tokenHash: other, userID: admin.id, createdAt: now, expiresAt: now.addingTimeInterval(3600)), verifiedHash: nil)
        try await store.revokeSession(tokenHash: other, at: now)
        try await store.revokeSession(tokenHash: other, at: now, audit: audit(company.id, .signOut))
        #expect(try await store.auditEvents(AuditQuery(companyID: company.id, action: .signOut)).count == 1)
        #expect(try await store.session(tokenHash: token)?.0.revokedAt == now)
    }

    @Test func uniqueness() async throws {
        let (a, adminA) = try await makeCompany("Gamma")
        let (b, _) = try await makeCompany("Delta")
        await #expect(throws: StoreError.emailTaken) {
            try await store.createUser(makeUser(b.id, adminA.email), passwordHash: nil, checking: nil, audit: audit(b.id))
        }
        _ = try await makeRoom(a.id, "Meeting Room")
        await #expect(throws: StoreError.roomNameTaken) { _ = try await makeRoom(a.id, "meeting room") }
        // Names differing only in case, any letter's, or in how an accent is composed are one name.
        let meeting = try await makeRoom(a.id, "Mødelokale")
        let cafe = try await makeRoom(a.id, "Café")
        let street = try await makeRoom(a.id, "Straße 1")
        for twin in ["MØDELOKALE", "CAFÉ", "Cafe\u{301}", "STRASSE 1"] {
            await #expect(throws: StoreError.roomNameTaken, "\(twin)") { _ = try await makeRoom(a.id, twin) }
        }
        // Renaming: a room may change the case of its own name; taking another's is a clash, not an index error.
        func rename(_ room: Room, _ name: String) async throws -> Room {
            try await store.updateRoom(room.id, in: a.id, audit: audit(a.id)) { $0.name = name }
        }
        await #expect(throws: StoreError.roomNameTaken) { _ = try await rename(cafe, "MØDELOKALE") }
        await #expect(throws: StoreError.roomNameTaken) { _ = try await rename(street, "meeting ROOM") }
        #expect(try await rename(cafe, "CAFÉ").name == "CAFÉ")
        #expect(try await rename(meeting, "Mødelokale 2").name == "Mødelokale 2")
        _ = try await makeRoom(a.id, "mødelokale")
        // Another company may use the same room name.
        _ = try await makeRoom(b.id, "Meeting Room")
        let lock = Lock(id: LockID("lock-unique")!, companyID: a.id, roomID: nil, name: "L", state: .registered, createdAt: now)
        try await store.createLock(lock)
        var other = lock
        other.companyID = b.id
        await #expect(throws: StoreError.lockIDTaken) { try await store.createLock(other) }
    }

    @Test("Addresses stored with combining accents are composed by v5; one whose composed form is taken stays as it was")
    func migrationFiveComposesEmails() async throws {
        let (company, admin) = try await makeCompany("Theta")
        let path = "\(directory.path)/db/unlockit.sqlite"
        func scalars(_ text: String?) -> [UInt32] { text.map { $0.unicodeScalars.map(\.value) } ?? [] }
        let (jose, anaComposed, anaDecomposed) = ("jose\u{301}@theta.test", "an\u{E1}@theta.test", "ana\u{301}@theta.test")
        try await DatabaseQueue(path: path).write { db in
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v5:%'")
            for (id, email) in [
                ("eeeeeeee-eeee-4eee-beee-000000000001", jose), ("eeeeeeee-eeee-4eee-beee-000000000002", anaComposed),
                ("eeeeeeee-eeee-4eee-beee-000000000003", anaDecomposed),
            ] {
                try db.execute(
                    sql: """
                        INSERT INTO user (id, companyId, email, name, role, securityLevel, enabled, passwordHash, mustChangePassword, createdAt, updatedAt)
                        SELECT ?, companyId, ?, 'N', 'employee', 0, 1, NULL, 0, createdAt, updatedAt FROM user WHERE id = ?
                        """, arguments: [id, email, admin.id.rawValue])
            }
        }
        let migrated = try SQLiteStore(path: path)
        let emails = try await migrated.users(in: company.id).map { scalars($0.email) }
        #expect(emails.contains(scalars("jos\u{E9}@theta.test")) && !emails.contains(scalars(jose)))
        #expect(emails.contains(scalars(anaComposed)) && emails.contains(scalars(anaDecomposed)))
        #expect(try await migrated.credentials(email: "jos\u{E9}@theta.test")?.user.name == "N")
    }

    @Test("v8 dates each lock's hold on its id from its registration, or from its retirement if it had served")
    func migrationEightDatesTheHolds() async throws {
        let (company, _) = try await makeCompany("Omicron")
        let (other, _) = try await makeCompany("Omicron-other")
        let room = try await makeRoom(company.id, "Office")
        let (registered, served, pending) = (LockID("lock-omicron-1")!, LockID("lock-omicron-2")!, LockID("lock-omicron-3")!)
        for id in [registered, served, pending] {
            try await store.createLock(Lock(id: id, companyID: company.id, roomID: room.id, name: "Door", state: .registered, createdAt: now))
        }
        try await store.activateLock(served, in: company.id, sealedKey: [1], at: now, audit: audit(company.id, .activateLock))
        let retirement = now.addingTimeInterval(3600)
        try await store.retireLock(served, in: company.id, at: retirement, audit: audit(company.id, .retireLock))
        try await store.holdPendingKey(pending, in: company.id, sealedKey: [2], wrappedKey: [3])
        let path = "\(directory.path)/db/unlockit.sqlite"
        try await DatabaseQueue(path: path).write { db in
            try db.execute(sql: #"ALTER TABLE "lock" DROP COLUMN heldSince"#)
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v8:%'")
        }
        let migrated = try SQLiteStore(path: path)
        let after = { (date: Date) in date.addingTimeInterval(1) }
        #expect(try await migrated.lockIDHolder(registered, for: other.id, lapsedBefore: now) == .otherCompany)
        #expect(try await migrated.lockIDHolder(registered, for: other.id, lapsedBefore: after(now)) == nil)
        #expect(try await migrated.lockIDHolder(served, for: other.id, lapsedBefore: retirement) == .otherCompany)
        #expect(try await migrated.lockIDHolder(served, for: other.id, lapsedBefore: after(retirement)) == nil)
        #expect(try await migrated.lockIDHolder(pending, for: other.id, lapsedBefore: .distantFuture) == .otherCompany)
    }

    @Test("Rooms that were one name by the new rule before it stay, and neither blocks editing the other")
    func migrationFourKeepsEarlierTwins() async throws {
        let (company, _) = try await makeCompany("Eta")
        let first = try await makeRoom(company.id, "Mødelokale")
        // Back to the schema before v4, with a twin only ASCII folding told apart.
        let path = "\(directory.path)/db/unlockit.sqlite"
        let twin = RoomID(unchecked: "ffffffff-ffff-4fff-bfff-ffffffffffff")
        try await DatabaseQueue(path: path).write { db in
            try db.execute(
                sql: """
                    DROP INDEX room_companyNameKey;
                    ALTER TABLE room DROP COLUMN nameKey;
                    DELETE FROM grdb_migrations WHERE identifier LIKE 'v4:%';
                    INSERT INTO room (id, companyId, name, description, type, bookable, requiredLevel, createdAt, updatedAt)
                    SELECT ?, companyId, 'MØDELOKALE', description, type, bookable, requiredLevel, createdAt, updatedAt FROM room WHERE id = ?;
                    """, arguments: [twin.rawValue, first.id.rawValue])
        }
        let migrated = try SQLiteStore(path: path)
        #expect(try await migrated.rooms(in: company.id).map(\.name).sorted() == ["MØDELOKALE", "Mødelokale"])
        let room = Room(
            id: .generate(), companyID: company.id, name: "mødelokale", description: "", type: .office, bookable: false, requiredLevel: nil,
            authorizedUsers: [], createdAt: now, updatedAt: now)
        await #expect(throws: StoreError.roomNameTaken) { try await migrated.createRoom(room, audit: audit(company.id, .createRoom)) }
        func edit(_ id: RoomID, _ change: @escaping @Sendable (inout Room) -> Void) async throws -> Room {
            try await migrated.updateRoom(id, in: company.id, audit: audit(company.id, .updateRoom), change: change)
        }
        #expect(try await edit(twin) { $0.description = "second floor" }.description == "second floor")
        #expect(try await edit(first.id) { $0.description = "first floor" }.description == "first floor")
        // Another case of its own name that v1's index would refuse, as a clash and not an error.
        await #expect(throws: StoreError.roomNameTaken) { _ = try await edit(twin) { $0.name = "Mødelokale" } }
        // With the keyed twin renamed away, the unkeyed one still holds its name.
        #expect(try await edit(first.id) { $0.name = "Lille mødelokale" }.name == "Lille mødelokale")
        for name in ["mødelokale", "MØDELOKALE"] {
            var taken = room
            taken.name = name
            await #expect(throws: StoreError.roomNameTaken, "\(name)") {
                try await migrated.createRoom(taken, audit: audit(company.id, .createRoom))
            }
            await #expect(throws: StoreError.roomNameTaken, "\(name)") { _ = try await edit(first.id) { $0.name = name } }
        }
        // Renamed, it has a key like any other room.
        #expect(try await edit(twin) { $0.name = "Mødelokale 2" }.name == "Mødelokale 2")
        var third = room
        third.name = "MØDELOKALE 2"
        await #expect(throws: StoreError.roomNameTaken) { try await migrated.createRoom(third, audit: audit(company.id, .createRoom)) }
        try await migrated.createRoom(room, audit: audit(company.id, .createRoom))
    }

    @Test func roomsForOneUsersAccessCarryOnlyThatUsersAuthorizations() async throws {
        let (company, admin) = try await makeCompany("Zeta")
        let other = makeUser(company.id, "other@zeta.test")
        try await store.createUser(other, passwordHash: nil, checking: nil, audit: audit(company.id))
        let shared = try await makeRoom(company.id, "Shared")
        let theirs = try await makeRoom(company.id, "Theirs")
        for (user, room) in [(admin.id, shared.id), (other.id, shared.id), (other.id, theirs.id)] {
            try await store.setAuthorization(user: user, room: room, in: company.id, authorized: true, audit: audit(company.id))
        }
        let all = try await store.rooms(in: company.id)
        #expect(all.map(\.authorizedUsers) == [[admin.id, other.id], [other.id]])
        let admins = try await store.rooms(in: company.id, authorizationsOf: admin.id)
        #expect(admins.map(\.name) == ["Shared", "Theirs"])
        #expect(admins.map(\.authorizedUsers) == [[admin.id], []])
    }

    @Test func theLastAdminStays() async throws {
        let (company, admin) = try await makeCompany("Epsilon")
        await #expect(throws: StoreError.lastAdmin) {
            _ = try await store.updateUser(admin.id, in: company.id, audit: audit(company.id)) { $0.role = .employee }
        }
        await #expect(throws: StoreError.lastAdmin) {
            _ = try await store.updateUser(admin.id, in: company.id, audit: audit(company.id)) { $0.enabled = false }
        }
        await #expect(throws: StoreError.lastAdmin) { try await store.deleteUser(admin.id, in: company.id, audit: audit(company.id)) }
        #expect(try await store.user(admin.id)?.role == .admin)

        let second = makeUser(company.id, "second@epsilon.test", role: .admin)
        try await store.createUser(second, passwordHash: nil, checking: nil, audit: audit(company.id))
        let demoted = try await store.updateUser(admin.id, in: company.id, audit: audit(company.id)) { $0.role = .employee }
        #expect(demoted.role == .employee)
        #expect(try await store.user(admin.id)?.role == .employee)
    }

    @Test func aBatchOfUsersIsAllOrNothing() async throws {
        let (company, admin) = try await makeCompany("Zeta")
        let batch = [makeUser(company.id, "one@zeta.test"), makeUser(company.id, admin.email), makeUser(company.id, "three@zeta.test")]
        await #expect(throws: StoreError.emailTaken) {
            try await store.createUsers(batch.map { ($0, nil, audit(company.id)) }, checking: nil)
        }
        #expect(try await store.users(in: company.id).count == 1)
    }

    @Test func roomsWithLiveLocksCannotBeDeleted() async throws {
        let (company, _) = try await makeCompany("Eta")
        let room = try await makeRoom(company.id, "Vault")
        let lock = Lock(id: LockID("lock-vault")!, companyID: company.id, roomID: room.id, name: "L", state: .registered, createdAt: now)
        try await store.createLock(lock)
        await #expect(throws: StoreError.roomHasLocks) { try await store.deleteRoom(room.id, in: company.id, audit: audit(company.id)) }
        try await store.retireLock(lock.id, in: company.id, at: now, audit: audit(company.id, .retireLock))
        try await store.deleteRoom(room.id, in: company.id, audit: audit(company.id))
        let retired = try await store.lock(lock.id, in: company.id)
        #expect(retired?.state == .retired)
        #expect(retired?.roomID == nil)
    }

    @Test func activationStoresTheSealedKeyAndRetirementDestroysIt() async throws {
        let (company, admin) = try await makeCompany("Theta")
        let room = try await makeRoom(company.id, "Office")
        let lock = Lock(id: LockID("lock-theta")!, companyID: company.id, roomID: room.id, name: "L", state: .registered, createdAt: now)
        try await store.createLock(lock)
        try await store.activateLock(lock.id, in: company.id, sealedKey: [1, 2, 3], at: now, audit: audit(company.id, .activateLock))
        let context = try await store.unlockContext(lock.id, in: company.id, for: admin.id)
        #expect(context?.lock.state == .active)
        #expect(context?.sealedKey == [1, 2, 3])
        #expect(context?.room == room)
        try await store.retireLock(lock.id, in: company.id, at: now, audit: audit(company.id, .retireLock))
        #expect(try await store.unlockContext(lock.id, in: company.id, for: admin.id)?.sealedKey == nil)
        await #expect(throws: StoreError.lockRetired) {
            try await store.activateLock(lock.id, in: company.id, sealedKey: [1], at: now, audit: audit(company.id))
        }
    }

    @Test func aRetiredLocksIDCanBeRegisteredAgainByItsCompanyOnly() async throws {
        let (company, admin) = try await makeCompany("Iota")
        let (other, _) = try await makeCompany("Iota-other")
        let room = try await makeRoom(company.id, "Office")
        let hall = try await makeRoom(company.id, "Hall")
        let otherRoom = try await makeRoom(other.id, "Elsewhere")
        let id = LockID("lock-iota")!
        try await store.createLock(Lock(id: id, companyID: company.id, roomID: room.id, name: "First", state: .registered, createdAt: now))
        try await store.activateLock(id, in: company.id, sealedKey: [1, 2, 3], at: now, audit: audit(company.id, .activateLock))
        // Taken for everyone while it serves, its own company included.
        for (owner, place, holder) in [(company.id, hall.id, LockIDHolder.sameCompany), (other.id, otherRoom.id, .otherCompany)] {
            #expect(try await store.lockIDHolder(id, for: owner, lapsedBefore: now) == holder)
            await #expect(throws: StoreError.lockIDTaken) {
                try await store.createLock(Lock(id: id, companyID: owner, roomID: place, name: "Again", state: .registered, createdAt: now))
            }
        }
        try await store.retireLock(id, in: company.id, at: now, audit: audit(company.id, .retireLock))
        // Retired: still taken for another company (for the lapse after its retirement).
        #expect(try await store.lockIDHolder(id, for: other.id, lapsedBefore: now) == .otherCompany)
        await #expect(throws: StoreError.lockIDTaken) {
            try await store.createLock(Lock(id: id, companyID: other.id, roomID: otherRoom.id, name: "Theirs", state: .registered, createdAt: now))
        }
        #expect(try await store.lock(id, in: other.id) == nil)
        // Its own company registers it anew: a new name, room and dates, and no key of the old life.
        #expect(try await store.lockIDHolder(id, for: company.id, lapsedBefore: now) == nil)
        let later = now.addingTimeInterval(86_400)
        try await store.createLock(
            Lock(id: id, companyID: company.id, roomID: hall.id, name: "Second", state: .registered, createdAt: later),
            checking: nil, audit: audit(company.id, .registerLock))
        let again = try #require(try await store.lock(id, in: company.id))
        #expect(again.state == .registered && again.name == "Second" && again.roomID == hall.id)
        #expect(again.createdAt == later && again.activatedAt == nil && again.retiredAt == nil && !again.online)
        #expect(try await store.unlockContext(id, in: company.id, for: admin.id)?.sealedKey == nil)
        #expect(try await store.locks(in: company.id).map(\.id) == [id])
        #expect(try await store.lockIDHolder(id, for: company.id, lapsedBefore: now) != nil)
        // What the row held before is in the event that took it over.
        let events = try await store.auditEvents(AuditQuery(companyID: company.id, action: .registerLock))
        #expect(events.count == 1)
        #expect(
            events.first?.changes == [
                AuditChange(field: "state", from: "retired", to: "registered"), AuditChange(field: "name", from: "First", to: "Second"),
                AuditChange(field: "roomId", from: room.id.rawValue, to: hall.id.rawValue),
            ])
    }

    @Test func anotherCompanysLockNotInServiceLetsItsIDGoOnceItsHoldLapses() async throws {
        let (owner, _) = try await makeCompany("Lambda")
        let (taker, _) = try await makeCompany("Lambda-taker")
        let ownerRoom = try await makeRoom(owner.id, "Office")
        let takerRoom = try await makeRoom(taker.id, "Hall")
        let id = LockID("lock-lambda")!
        let later = now.addingTimeInterval(1)
        try await store.createLock(
            Lock(id: id, companyID: owner.id, roomID: ownerRoom.id, name: "Theirs", state: .registered, createdAt: now), checking: nil,
            audit: audit(owner.id, .registerLock))
        // Recent: kept from everyone. Lapsed: from its own company still, from no other.
        #expect(try await store.lockIDHolder(id, for: taker.id, lapsedBefore: now) == .otherCompany)
        #expect(try await store.lockIDHolder(id, for: owner.id, lapsedBefore: later) == .sameCompany)
        #expect(try await store.lockIDHolder(id, for: taker.id, lapsedBefore: later) == nil)
        await #expect(throws: StoreError.lockIDTaken) {
            try await store.releaseLapsedLock(id, for: taker.id, lapsedBefore: now, at: later, checking: nil)
        }
        await #expect(throws: StoreError.lockIDTaken) {
            try await store.releaseLapsedLock(id, for: owner.id, lapsedBefore: later, at: later, checking: nil)
        }
        // Registering over another company's lock never frees it: only a release does.
        let mine = Lock(id: id, companyID: taker.id, roomID: takerRoom.id, name: "Mine", state: .registered, createdAt: later)
        await #expect(throws: StoreError.lockIDTaken) { try await store.createLock(mine, checking: nil, audit: audit(taker.id, .registerLock)) }

        #expect(try await store.releaseLapsedLock(id, for: taker.id, lapsedBefore: later, at: later, checking: nil))
        #expect(try await store.lock(id, in: owner.id) == nil)
        #expect(try await store.locks(in: owner.id).isEmpty)
        #expect(try await store.releaseLapsedLock(id, for: taker.id, lapsedBefore: later, at: later, checking: nil) == false)
        try await store.createLock(mine, checking: nil, audit: audit(taker.id, .registerLock))
        #expect(try await store.lock(id, in: taker.id) == mine)
        // The new company's event says nothing of the old lock; the old company's says it went, not to whom.
        let registered = try await store.auditEvents(AuditQuery(companyID: taker.id, action: .registerLock))
        #expect(registered.count == 1 && registered.first?.changes == [])
        let released = try await store.auditEvents(AuditQuery(companyID: owner.id, action: .releaseLock))
        #expect(released.count == 1)
        #expect(released.first?.lockID == id && released.first?.roomID == ownerRoom.id && released.first?.actorID == nil)
        #expect(released.first?.outcome == .success && released.first?.reason == "registered_elsewhere" && released.first?.at == later)
        #expect(try await store.auditEvents(AuditQuery(companyID: taker.id, action: .releaseLock)).isEmpty)
    }

    @Test func anActiveLockOrAPendingPairingKeepsItsIDAndARetiredOneFromItsRetirement() async throws {
        let (owner, _) = try await makeCompany("Mu")
        let (other, _) = try await makeCompany("Mu-other")
        let room = try await makeRoom(owner.id, "Office")
        let ever = Date.distantFuture
        let (active, pending, retired) = (LockID("lock-mu-active")!, LockID("lock-mu-pending")!, LockID("lock-mu-retired")!)
        for id in [active, pending, retired] {
            try await store.createLock(Lock(id: id, companyID: owner.id, roomID: room.id, name: "Door", state: .registered, createdAt: now))
        }
        for id in [active, retired] {
            try await store.activateLock(id, in: owner.id, sealedKey: [1], at: now, audit: audit(owner.id, .activateLock))
        }
        // The setup code unwrapped the lock's key, and the activation's answer was lost.
        try await store.holdPendingKey(pending, in: owner.id, sealedKey: [2], wrappedKey: [3])
        let retirement = now.addingTimeInterval(3600)
        try await store.retireLock(retired, in: owner.id, at: retirement, audit: audit(owner.id, .retireLock))
        // However long ago: the active lock and the pending pairing keep their ids.
        for id in [active, pending] {
            #expect(try await store.lockIDHolder(id, for: other.id, lapsedBefore: ever) == .otherCompany)
            await #expect(throws: StoreError.lockIDTaken) {
                try await store.releaseLapsedLock(id, for: other.id, lapsedBefore: ever, at: now, checking: nil)
            }
        }
        // The retired lock that had served: counted from its retirement, not its registration.
        #expect(try await store.lockIDHolder(retired, for: other.id, lapsedBefore: retirement) == .otherCompany)
        #expect(try await store.lockIDHolder(retired, for: other.id, lapsedBefore: retirement.addingTimeInterval(1)) == nil)
        #expect(try await store.lockIDHolder(retired, for: owner.id, lapsedBefore: ever) == nil)
        #expect(try await store.releaseLapsedLock(retired, for: other.id, lapsedBefore: ever, at: ever, checking: nil))
        #expect(try await store.lock(active, in: owner.id)?.state == .active)
    }

    @Test func retiringALockNeverActivatedAndRegisteringItAgainDoesNotRestartItsHold() async throws {
        let (squatter, _) = try await makeCompany("Nu")
        let (owner, _) = try await makeCompany("Nu-owner")
        let room = try await makeRoom(squatter.id, "Office")
        let id = LockID("lock-nu")!
        try await store.createLock(Lock(id: id, companyID: squatter.id, roomID: room.id, name: "Door", state: .registered, createdAt: now))
        let later = now.addingTimeInterval(3600)
        try await store.retireLock(id, in: squatter.id, at: later, audit: audit(squatter.id, .retireLock))
        try await store.createLock(
            Lock(id: id, companyID: squatter.id, roomID: room.id, name: "Again", state: .registered, createdAt: later), checking: nil,
            audit: audit(squatter.id, .registerLock))
        #expect(try await store.lock(id, in: squatter.id)?.createdAt == later)
        // Held since the first registration: a lapse counted from then has passed.
        #expect(try await store.lockIDHolder(id, for: owner.id, lapsedBefore: now.addingTimeInterval(1)) == nil)
        #expect(try await store.lockIDHolder(id, for: owner.id, lapsedBefore: now) == .otherCompany)
        // Once it was activated, a registration again after retirement starts a hold of its own.
        try await store.activateLock(id, in: squatter.id, sealedKey: [1], at: later, audit: audit(squatter.id, .activateLock))
        let latest = later.addingTimeInterval(3600)
        try await store.retireLock(id, in: squatter.id, at: latest, audit: audit(squatter.id, .retireLock))
        try await store.createLock(
            Lock(id: id, companyID: squatter.id, roomID: room.id, name: "Third", state: .registered, createdAt: latest), checking: nil,
            audit: audit(squatter.id, .registerLock))
        #expect(try await store.lockIDHolder(id, for: owner.id, lapsedBefore: latest) == .otherCompany)
        #expect(try await store.lockIDHolder(id, for: owner.id, lapsedBefore: latest.addingTimeInterval(1)) == nil)
    }

    @Test func aPresenceSeenBeforeALockWasRegisteredIsNotItsPresence() async throws {
        let (company, _) = try await makeCompany("Xi")
        let room = try await makeRoom(company.id, "Office")
        let id = LockID("lock-xi")!
        try await store.createLock(Lock(id: id, companyID: company.id, roomID: room.id, name: "Door", state: .registered, createdAt: now))
        try await store.recordPresence([LockPresence(lock: id, online: true, lastSeen: now.addingTimeInterval(-1), firmwareVersion: "0.9")])
        #expect(try await store.lock(id, in: company.id).map { [$0.online, $0.firmwareVersion == nil] } == [false, true])
        try await store.recordPresence([LockPresence(lock: id, online: true, lastSeen: now, firmwareVersion: "1.0")])
        #expect(try await store.lock(id, in: company.id).map { [$0.online, $0.firmwareVersion == "1.0"] } == [true, true])
    }

    @Test func aLockCommitsWithItsEventOnlyWhileItsAdminStillIsOne() async throws {
        let (company, admin) = try await makeCompany("Kappa")
        let room = try await makeRoom(company.id, "Office")
        let token: [UInt8] = Array(repeating: 11, count: 32)
        _ = try await store.createSession(
            Session(tokenHash: token, userID: admin.id, createdAt: now, expiresAt: now.addingTimeInterval(3600)), verifiedHash: nil)
        let check = AdminCheck(session: token, company: company.id, at: now)
        let lock = Lock(id: LockID("lock-kappa")!, companyID: company.id, roomID: room.id, name: "L", state: .registered, createdAt: now)
        #expect(try await store.lockIDHolder(lock.id, for: company.id, lapsedBefore: now) == nil)
        try await store.createLock(lock, checking: check, audit: audit(company.id, .registerLock))
        #expect(try await store.lockIDHolder(lock.id, for: company.id, lapsedBefore: now) != nil)
        #expect(try await store.auditEvents(AuditQuery(companyID: company.id, action: .registerLock)).count == 1)
        await #expect(throws: StoreError.lockIDTaken) {
            try await store.createLock(lock, checking: check, audit: audit(company.id, .registerLock))
        }

        try await store.revokeSession(tokenHash: token, at: now)
        await #expect(throws: StoreError.sessionEnded) { try await store.verifyAdmin(check) }
        let second = Lock(id: LockID("lock-kappa-2")!, companyID: company.id, roomID: room.id, name: "M", state: .registered, createdAt: now)
        await #expect(throws: StoreError.sessionEnded) {
            try await store.createLock(second, checking: check, audit: audit(company.id, .registerLock))
        }
        await #expect(throws: StoreError.sessionEnded) {
            try await store.activateLock(lock.id, in: company.id, sealedKey: [1], at: now, checking: check, audit: audit(company.id, .activateLock))
        }
        #expect(try await store.lockIDHolder(second.id, for: company.id, lapsedBefore: now) == nil)
        #expect(try await store.lock(lock.id, in: company.id)?.state == .registered)
        #expect(try await store.auditEvents(AuditQuery(companyID: company.id, action: .registerLock)).count == 1)
        #expect(try await store.auditEvents(AuditQuery(companyID: company.id, action: .activateLock)).isEmpty)
        // Nor does it release another company's lock whose hold has lapsed.
        let (other, _) = try await makeCompany("Kappa-other")
        let theirs = Lock(
            id: LockID("lock-kappa-theirs")!, companyID: other.id, roomID: try await makeRoom(other.id, "Hall").id, name: "T", state: .registered,
            createdAt: now)
        try await store.createLock(theirs)
        await #expect(throws: StoreError.sessionEnded) {
            try await store.releaseLapsedLock(theirs.id, for: company.id, lapsedBefore: .distantFuture, at: now, checking: check)
        }
        #expect(try await store.lock(theirs.id, in: other.id) != nil)
    }

    @Test func aPendingPairingKeyIsHeldUntilTheActivationTakesIt() async throws {
        let (company, admin) = try await makeCompany("Theta-pending")
        let (other, _) = try await makeCompany("Theta-other")
        let room = try await makeRoom(company.id, "Office")
        let lock = Lock(id: LockID("lock-pending")!, companyID: company.id, roomID: room.id, name: "L", state: .registered, createdAt: now)
        try await store.createLock(lock)
        #expect(try await store.pendingKey(lock.id, in: company.id) == nil)
        try await store.holdPendingKey(lock.id, in: company.id, sealedKey: [1], wrappedKey: [2])
        try await store.holdPendingKey(lock.id, in: company.id, sealedKey: [3], wrappedKey: [4])  // a later pairing replaces it
        let held = try await store.pendingKey(lock.id, in: company.id)
        #expect(held?.sealedKey == [3] && held?.wrappedKey == [4])
        // Another company sees nothing and cannot set anything.
        #expect(try await store.pendingKey(lock.id, in: other.id) == nil)
        await #expect(throws: StoreError.notFound) { try await store.holdPendingKey(lock.id, in: other.id, sealedKey: [5], wrappedKey: [6]) }
        // Not a key to unlock with until the activation is stored; then it is, and nothing stays pending.
        #expect(try await store.unlockContext(lock.id, in: company.id, for: admin.id)?.sealedKey == nil)
        try await store.activateLock(lock.id, in: company.id, sealedKey: [3], at: now, audit: audit(company.id, .activateLock))
        #expect(try await store.pendingKey(lock.id, in: company.id) == nil)
        #expect(try await store.unlockContext(lock.id, in: company.id, for: admin.id)?.sealedKey == [3])
        // Retirement destroys a pending key too, and a retired lock takes none.
        try await store.holdPendingKey(lock.id, in: company.id, sealedKey: [7], wrappedKey: [8])
        try await store.retireLock(lock.id, in: company.id, at: now, audit: audit(company.id, .retireLock))
        #expect(try await store.pendingKey(lock.id, in: company.id) == nil)
        await #expect(throws: StoreError.lockRetired) { try await store.holdPendingKey(lock.id, in: company.id, sealedKey: [9], wrappedKey: [9]) }
    }

    @Test func anEditThatChangesNothingWritesNothing() async throws {
        let (company, admin) = try await makeCompany("Mu")
        let room = try await makeRoom(company.id, "Lab")
        let lock = Lock(id: LockID("lock-mu")!, companyID: company.id, roomID: room.id, name: "Door", state: .registered, createdAt: now)
        try await store.createLock(lock)
        func events() async throws -> Int { try await store.auditEvents(AuditQuery(companyID: company.id, limit: 1000)).count }
        let before = try await events()
        let later = now.addingTimeInterval(60)
        // The same values again, with a new updatedAt: no event, and the stored updatedAt stays.
        let user = try await store.updateUser(admin.id, in: company.id, audit: audit(company.id, .updateUser)) {
            $0.name = admin.name
            $0.updatedAt = later
        }
        #expect(user.updatedAt == now)
        let sameRoom = try await store.updateRoom(room.id, in: company.id, audit: audit(company.id, .updateRoom)) {
            $0.name = "Lab"
            $0.updatedAt = later
        }
        #expect(sameRoom.updatedAt == now)
        #expect(
            try await store.updateLock(lock.id, in: company.id, name: "Door", room: room.id, audit: audit(company.id, .updateLock)).name == "Door")
        #expect(try await events() == before)
        #expect(try await store.room(room.id, in: company.id)?.updatedAt == now)
        // A real change is written, and recorded once.
        let renamed = try await store.updateRoom(room.id, in: company.id, audit: audit(company.id, .updateRoom)) {
            $0.name = "Annex"
            $0.updatedAt = later
        }
        #expect(renamed.name == "Annex" && renamed.updatedAt == later)
        #expect(try await events() == before + 1)
    }

    @Test func aPasswordIsSetOnlyForAUserOfTheCompanyNamed() async throws {
        let (acme, admin) = try await makeCompany("Kappa")
        let (globex, _) = try await makeCompany("Lambda")
        let token: [UInt8] = Array(repeating: 3, count: 32)
        _ = try await store.createSession(
            Session(tokenHash: token, userID: admin.id, createdAt: now, expiresAt: now.addingTimeInterval(3600)), verifiedHash: nil)
        let before = try await store.credentials(email: admin.email)?.passwordHash
        for replacing in [nil, before] {
            await #expect(throws: StoreError.self) {
                try await store.setPassword(
                    admin.id, in: globex.id, hash: "taken over", mustChange: false, keepSession: nil, replacing: replacing, checking: nil,
                    audit: audit(globex.id, .changePassword))
            }
        }
        #expect(try await store.credentials(email: admin.email)?.passwordHash == before)
        #expect(try await store.session(tokenHash: token)?.session.isValid(at: now) == true)
        // Its own company's, it is set.
        try await store.setPassword(
            admin.id, in: acme.id, hash: "new", mustChange: false, keepSession: nil, replacing: nil, checking: nil,
            audit: audit(acme.id, .changePassword))
        #expect(try await store.credentials(email: admin.email)?.passwordHash == "new")
    }

    @Test func aPasswordChangeRevokesTheOtherSessions() async throws {
        let (company, admin) = try await makeCompany("Iota")
        let keep: [UInt8] = Array(repeating: 1, count: 32)
        let other: [UInt8] = Array(repeating: 2, count: 32)
        for hash in [keep, other] {
            _ = try await store.createSession(
                Session(tokenHash: hash, userID: admin.id, createdAt: now, expiresAt: now.addingTimeInterval(3600)), verifiedHash: nil)
        }
        try await store.setPassword(
            admin.id, in: company.id, hash: "new", mustChange: false, keepSession: keep, replacing: nil, checking: nil,
            audit: audit(company.id, .changePassword))
        #expect(try await store.session(tokenHash: keep)?.session.isValid(at: now) == true)
        #expect(try await store.session(tokenHash: other)?.session.isValid(at: now) == false)
        try await store.revokeSession(tokenHash: keep, at: now)
        #expect(try await store.session(tokenHash: keep)?.session.isValid(at: now) == false)
    }

    @Test func aResetGivesAUserWithoutAPasswordNone() async throws {
        let (company, _) = try await makeCompany("Sigma")
        let sso = makeUser(company.id, "sso@sigma.test")
        try await store.createUser(sso, passwordHash: nil, checking: nil, audit: audit(company.id))
        let token: [UInt8] = Array(repeating: 9, count: 32)
        _ = try await store.createSession(
            Session(tokenHash: token, userID: sso.id, createdAt: now, expiresAt: now.addingTimeInterval(3600)), verifiedHash: nil)
        let events = try await store.auditEvents(AuditQuery(companyID: company.id)).count
        await #expect(throws: StoreError.noPassword) {
            try await store.setPassword(
                sso.id, in: company.id, hash: "reset", mustChange: true, keepSession: nil, replacing: nil, checking: nil,
                audit: audit(company.id, .changePassword))
        }
        // Nothing written: no password, the session goes on, no event.
        #expect(try await store.credentials(email: sso.email).map { $0.passwordHash == nil } == true)
        #expect(try await store.session(tokenHash: token)?.session.isValid(at: now) == true)
        #expect(try await store.auditEvents(AuditQuery(companyID: company.id)).count == events)
    }

    @Test func anIDTokenLinksItsAccountAtTheIssuerToOneUserOnly() async throws {
        let (company, _) = try await makeCompany("Upsilon")
        let (other, _) = try await makeCompany("Phi")
        let dave = makeUser(company.id, "dave@upsilon.test")
        let erin = makeUser(company.id, "erin@upsilon.test")
        for user in [dave, erin] { try await store.createUser(user, passwordHash: nil, checking: nil, audit: audit(company.id)) }
        var byte: UInt8 = 0
        func signIn(_ user: User, _ issuer: String, _ subject: String) async throws {
            byte += 1
            let session = Session(
                tokenHash: Array(repeating: byte, count: 32), userID: user.id, createdAt: now, expiresAt: now.addingTimeInterval(3600))
            let token = SpentIDToken(
                digest: Array(repeating: byte, count: 32), keptUntil: now.addingTimeInterval(3600),
                identity: OIDCIdentity(issuer: issuer, subject: subject))
            _ = try await store.createSession(session, verifiedHash: nil, spending: token)
        }
        try await signIn(dave, "https://a.test", "d-1")
        try await signIn(dave, "https://a.test", "d-1")
        // Another issuer's account is linked beside the first.
        try await signIn(dave, "https://b.test", "d-b")
        #expect(
            try await store.identities(of: dave.id, in: company.id)
                == [OIDCIdentity(issuer: "https://a.test", subject: "d-1"), OIDCIdentity(issuer: "https://b.test", subject: "d-b")])
        // Another account at an issuer Dave has one at, or Dave's account for Erin: no session, nothing written.
        await #expect(throws: StoreError.identityMismatch) { try await signIn(dave, "https://a.test", "d-2") }
        await #expect(throws: StoreError.identityMismatch) { try await signIn(erin, "https://a.test", "d-1") }
        #expect(try await store.session(tokenHash: Array(repeating: byte, count: 32)) == nil)
        #expect(try await store.identities(of: erin.id, in: company.id).isEmpty)
        // Nor is either token kept as spent: the three that signed Dave in are.
        #expect(try await store.purgeSpentIDTokens(keptUntilBefore: .distantFuture) == 3)

        // Unlinked by an admin of the company, with an event; by one of another company, not at all.
        await #expect(throws: StoreError.notFound) {
            _ = try await store.unlinkIdentities(of: dave.id, in: other.id, checking: nil, audit: audit(other.id, .unlinkIdentities))
        }
        let events = try await store.auditEvents(AuditQuery(companyID: company.id)).count
        #expect(try await store.unlinkIdentities(of: dave.id, in: company.id, checking: nil, audit: audit(company.id, .unlinkIdentities)) == 2)
        #expect(try await store.unlinkIdentities(of: dave.id, in: company.id, checking: nil, audit: audit(company.id, .unlinkIdentities)) == 0)
        #expect(try await store.auditEvents(AuditQuery(companyID: company.id)).count == events + 1)
        #expect(try await store.identities(of: dave.id, in: company.id).isEmpty)
        // Then the next sign-in links anew; a deleted user's links go with them.
        try await signIn(dave, "https://a.test", "d-2")
        try await store.deleteUser(dave.id, in: company.id, audit: audit(company.id, .deleteUser))
        try await signIn(erin, "https://a.test", "d-2")
    }

    @Test func aSignInOrPasswordChangeThatVerifiedAnOldHashWritesNothing() async throws {
        let (company, admin) = try await makeCompany("Omega")
        let dave = makeUser(company.id, "dave@omega.test")
        try await store.createUser(dave, passwordHash: "old", checking: nil, audit: audit(company.id))
        func session(_ byte: UInt8) -> Session {
            Session(tokenHash: Array(repeating: byte, count: 32), userID: dave.id, createdAt: now, expiresAt: now.addingTimeInterval(3600))
        }
        // The sign-in checked "old"; an admin's reset set "reset" while bcrypt ran: no session.
        try await store.setPassword(
            dave.id, in: company.id, hash: "reset", mustChange: true, keepSession: nil, replacing: nil, checking: nil,
            audit: audit(company.id, .changePassword))
        await #expect(throws: StoreError.credentialsChanged) { _ = try await store.createSession(session(1), verifiedHash: "old") }
        #expect(try await store.session(tokenHash: session(1).tokenHash) == nil)
        // Against the hash as stored it starts, and returns the user as stored now.
        let signedIn = try await store.createSession(session(2), verifiedHash: "reset")
        #expect(signedIn.mustChangePassword && signedIn.id == dave.id)
        // Nor does a change of one's own password that verified the old hash replace the reset one.
        await #expect(throws: StoreError.credentialsChanged) {
            try await store.setPassword(
                dave.id, in: company.id, hash: "mine", mustChange: false, keepSession: nil, replacing: "old", checking: nil,
                audit: audit(company.id, .changePassword)
            )
        }
        #expect(try await store.credentials(email: dave.email)?.passwordHash == "reset")
        // A user disabled meanwhile gets no session either, whatever the sign-in's method.
        _ = try await store.updateUser(dave.id, in: company.id, audit: audit(company.id)) { $0.enabled = false }
        await #expect(throws: StoreError.userDisabled) { _ = try await store.createSession(session(3), verifiedHash: nil) }
        try await store.deleteUser(dave.id, in: company.id, audit: audit(company.id))
        await #expect(throws: StoreError.credentialsChanged) { _ = try await store.createSession(session(4), verifiedHash: nil) }
        _ = admin
    }

    @Test func anIDTokenStartsOneSessionUntilItIsForgotten() async throws {
        let (_, admin) = try await makeCompany("Kappa")
        func session(_ byte: UInt8) -> Session {
            Session(tokenHash: Array(repeating: byte, count: 32), userID: admin.id, createdAt: now, expiresAt: now.addingTimeInterval(3600))
        }
        let spent = SpentIDToken(digest: Array(repeating: 0xAB, count: 32), keptUntil: now.addingTimeInterval(120))
        let other = SpentIDToken(digest: Array(repeating: 0xCD, count: 32), keptUntil: now.addingTimeInterval(600))
        _ = try await store.createSession(session(1), verifiedHash: nil, spending: spent)
        // Again, even through another store on the same file (a restarted server): no session.
        let again = try SQLiteStore(path: "\(directory.path)/db/unlockit.sqlite")
        await #expect(throws: StoreError.idTokenSpent) { _ = try await again.createSession(session(2), verifiedHash: nil, spending: spent) }
        #expect(try await store.session(tokenHash: session(2).tokenHash) == nil)
        _ = try await store.createSession(session(3), verifiedHash: nil, spending: other)
        // Forgotten once the verifier refuses it anyway, and not before.
        #expect(try await store.purgeSpentIDTokens(keptUntilBefore: now.addingTimeInterval(119)) == 0)
        #expect(try await store.purgeSpentIDTokens(keptUntilBefore: now.addingTimeInterval(121)) == 1)
        _ = try await store.createSession(session(4), verifiedHash: nil, spending: spent)
        await #expect(throws: StoreError.idTokenSpent) { _ = try await store.createSession(session(5), verifiedHash: nil, spending: other) }
    }

    @Test func anAdminsSlowWriteChecksTheAdminAgain() async throws {
        let (company, admin) = try await makeCompany("Psi")
        let second = makeUser(company.id, "second@psi.test", role: .admin)
        try await store.createUser(second, passwordHash: nil, checking: nil, audit: audit(company.id))
        let token: [UInt8] = Array(repeating: 7, count: 32)
        _ = try await store.createSession(
            Session(tokenHash: token, userID: admin.id, createdAt: now, expiresAt: now.addingTimeInterval(3600)), verifiedHash: nil)
        let check = AdminCheck(session: token, company: company.id, at: now)
        try await store.createUser(makeUser(company.id, "a@psi.test"), passwordHash: nil, checking: check, audit: audit(company.id))

        // Another company's id, a later time than the session's expiry: not this admin's session.
        let (other, _) = try await makeCompany("Chi")
        await #expect(throws: StoreError.sessionEnded) {
            try await store.createUser(
                makeUser(company.id, "b@psi.test"), passwordHash: nil, checking: AdminCheck(session: token, company: other.id, at: now),
                audit: audit(company.id))
        }
        await #expect(throws: StoreError.sessionEnded) {
            try await store.createUser(
                makeUser(company.id, "b@psi.test"), passwordHash: nil,
                checking: AdminCheck(session: token, company: company.id, at: now.addingTimeInterval(3601)), audit: audit(company.id))
        }
        // Demoted while the passwords were hashed: nothing of the batch is written.
        _ = try await store.updateUser(admin.id, in: company.id, audit: audit(company.id)) { $0.role = .employee }
        await #expect(throws: StoreError.adminRequired) {
            try await store.createUsers([(makeUser(company.id, "c@psi.test"), nil, audit(company.id))], checking: check)
        }
        await #expect(throws: StoreError.adminRequired) {
            try await store.setPassword(
                second.id, in: company.id, hash: "x", mustChange: true, keepSession: nil, replacing: nil, checking: check,
                audit: audit(company.id, .changePassword))
        }
        // Signed out, or disabled: the session no longer counts.
        _ = try await store.updateUser(admin.id, in: company.id, audit: audit(company.id)) { $0.role = .admin }
        let signedOut: [UInt8] = Array(repeating: 8, count: 32)
        _ = try await store.createSession(
            Session(tokenHash: signedOut, userID: admin.id, createdAt: now, expiresAt: now.addingTimeInterval(3600)), verifiedHash: nil)
        try await store.revokeSession(tokenHash: signedOut, at: now)
        await #expect(throws: StoreError.sessionEnded) {
            try await store.createUser(
                makeUser(company.id, "d@psi.test"), passwordHash: nil, checking: AdminCheck(session: signedOut, company: company.id, at: now),
                audit: audit(company.id))
        }
        _ = try await store.updateUser(admin.id, in: company.id, audit: audit(company.id)) { $0.enabled = false }
        await #expect(throws: StoreError.sessionEnded) {
            try await store.createUser(makeUser(company.id, "d@psi.test"), passwordHash: nil, checking: check, audit: audit(company.id))
        }
        #expect(Set(try await store.users(in: company.id).map(\.email)) == [admin.email, second.email, "a@psi.test"])

        // A user's own new password: any role, but the session and the user must still be valid.
        func change(_ session: [UInt8]) async throws {
            try await store.setPassword(
                admin.id, in: company.id, hash: "new", mustChange: false, keepSession: session, replacing: nil,
                checking: AdminCheck(session: session, company: company.id, at: now, needsAdmin: false), audit: audit(company.id, .changePassword))
        }
        await #expect(throws: StoreError.sessionEnded) { try await change(token) }  // disabled above
        // Enabled again (which ends the sessions from before) and an employee: a new session may.
        _ = try await store.updateUser(admin.id, in: company.id, audit: audit(company.id)) {
            $0.enabled = true
            $0.role = .employee
        }
        await #expect(throws: StoreError.sessionEnded) { try await change(token) }
        let fresh: [UInt8] = Array(repeating: 9, count: 32)
        _ = try await store.createSession(
            Session(tokenHash: fresh, userID: admin.id, createdAt: now, expiresAt: now.addingTimeInterval(3600)), verifiedHash: nil)
        try await change(fresh)
        #expect(try await store.credentials(email: admin.email)?.passwordHash == "new")
    }

    @Test func onlyAnAuthorizationThatChangesSomethingIsAudited() async throws {
        let (company, _) = try await makeCompany("Rho")
        let erin = makeUser(company.id, "erin@rho.test")
        try await store.createUser(erin, passwordHash: nil, checking: nil, audit: audit(company.id))
        let room = try await makeRoom(company.id, "Vault")
        func authorize(_ yes: Bool) async throws {
            try await store.setAuthorization(
                user: erin.id, room: room.id, in: company.id, authorized: yes, audit: audit(company.id, yes ? .authorizeUser : .deauthorizeUser))
        }
        func events() async throws -> [AuditAction] {
            try await store.auditEvents(AuditQuery(companyID: company.id)).map(\.action).filter {
                $0 == .authorizeUser || $0 == .deauthorizeUser
            }
        }
        try await authorize(false)  // not on the list: nothing changes, nothing is logged
        try await authorize(true)
        try await authorize(true)  // already on it
        #expect(try await store.room(room.id, in: company.id)?.authorizedUsers == [erin.id])
        try await authorize(false)
        try await authorize(false)
        #expect(try await store.room(room.id, in: company.id)?.authorizedUsers == [])
        #expect(try await events() == [.deauthorizeUser, .authorizeUser])  // newest first
    }

    @Test func anEditChangesOnlyItsFieldsOfTheRowAsStored() async throws {
        let (company, _) = try await makeCompany("Kappa")
        let bob = makeUser(company.id, "bob@kappa.test", level: 2)
        try await store.createUser(bob, passwordHash: nil, checking: nil, audit: audit(company.id))
        // One admin disables Bob while another, who loaded him before, renames him: both edits stay.
        _ = try await store.updateUser(bob.id, in: company.id, audit: audit(company.id)) { $0.enabled = false }
        let renamed = try await store.updateUser(bob.id, in: company.id, audit: audit(company.id)) { user in
            #expect(!user.enabled)
            user.name = "Robert"
        }
        #expect(renamed.name == "Robert" && !renamed.enabled && renamed.securityLevel == 2)
        #expect(try await store.user(bob.id) == renamed)

        var room = try await makeRoom(company.id, "Vault")
        try await store.setAuthorization(user: bob.id, room: room.id, in: company.id, authorized: true, audit: audit(company.id))
        _ = try await store.updateRoom(room.id, in: company.id, audit: audit(company.id)) { $0.requiredLevel = 5 }
        room = try await store.updateRoom(room.id, in: company.id, audit: audit(company.id)) { $0.description = "Keys" }
        #expect(room.requiredLevel == 5 && room.description == "Keys" && room.authorizedUsers == [bob.id])
        #expect(try await store.room(room.id, in: company.id) == room)
    }

    @Test func reEnablingAUserRevokesTheSessionsFromBefore() async throws {
        let (company, _) = try await makeCompany("Lambda")
        let carol = makeUser(company.id, "carol@lambda.test")
        try await store.createUser(carol, passwordHash: nil, checking: nil, audit: audit(company.id))
        let token: [UInt8] = Array(repeating: 3, count: 32)
        _ = try await store.createSession(
            Session(tokenHash: token, userID: carol.id, createdAt: now, expiresAt: now.addingTimeInterval(3600)), verifiedHash: nil)
        _ = try await store.updateUser(carol.id, in: company.id, audit: audit(company.id)) { $0.enabled = false }
        #expect(try await store.session(tokenHash: token)?.session.isValid(at: now) == true)  // still audits her unlock attempts
        _ = try await store.updateUser(carol.id, in: company.id, audit: audit(company.id)) { user in
            user.enabled = true
            user.updatedAt = now.addingTimeInterval(60)
        }
        #expect(try await store.session(tokenHash: token)?.session.isValid(at: now.addingTimeInterval(61)) == false)
    }

    @Test func expiredSessionsArePurged() async throws {
        let (_, admin) = try await makeCompany("Mu")
        let expired: [UInt8] = Array(repeating: 4, count: 32)
        let live: [UInt8] = Array(repeating: 5, count: 32)
        _ = try await store.createSession(
            Session(tokenHash: expired, userID: admin.id, createdAt: now, expiresAt: now.addingTimeInterval(10)), verifiedHash: nil)
        _ = try await store.createSession(
            Session(tokenHash: live, userID: admin.id, createdAt: now, expiresAt: now.addingTimeInterval(3600)), verifiedHash: nil)
        #expect(try await store.purgeSessions(expiredBefore: now.addingTimeInterval(60)) == 1)
        #expect(try await store.session(tokenHash: expired) == nil)
        #expect(try await store.session(tokenHash: live) != nil)
    }

    @Test func queuedAuditEventsAreInTheLogForTheNextRead() async throws {
        let (company, admin) = try await makeCompany("Lambda")
        let lock = LockID("lock-lambda")!
        #expect(store.auditHasRoom)
        for index in 0..<100 {
            store.enqueue(
                AuditEvent(
                    companyID: company.id, at: now, actorID: admin.id, action: .unlock, lockID: lock, outcome: .success, reason: "r\(index)"))
        }
        // No wait in between: a read includes every event handed in before it, in order.
        let events = try await store.auditEvents(AuditQuery(companyID: company.id, lockID: lock, limit: 1000))
        let reasons = events.map(\.reason)
        #expect(reasons == (0..<100).reversed().map { "r\($0)" })
    }

    @Test("An admin change comes after the unlocks queued before it, in the log's order")
    func anAdminChangeComesAfterQueuedUnlocks() async throws {
        let (company, admin) = try await makeCompany("Xi")
        let user = makeUser(company.id, "user@xi.test")
        try await store.createUser(user, passwordHash: nil, checking: nil, audit: audit(company.id))
        // The user's unlock is answered, its event queued; at once an admin disables the user.
        store.enqueue(
            AuditEvent(companyID: company.id, at: now, actorID: user.id, action: .unlock, lockID: LockID("lock-xi")!, outcome: .success))
        _ = try await store.updateUser(user.id, in: company.id, audit: audit(company.id, .updateUser)) { $0.enabled = false }
        let events = try await store.auditEvents(AuditQuery(companyID: company.id))
        // Newest first: the disabling, then the unlock that came before it.
        #expect(Array(events.map(\.action).prefix(3)) == [.updateUser, .unlock, .createUser], "\(events.map(\.action))")
        _ = admin
    }

    @Test("With from or to, pages run newest first by time and walk the window once, also where time and id disagree")
    func timeWindowsPageByTime() async throws {
        let (company, admin) = try await makeCompany("Mu")
        let (other, otherAdmin) = try await makeCompany("Nu")
        // Appended in this order (ids rise), with times out of that order and ties.
        let offsets: [Double] = [5, 1, 3, 3, 9, 0, 7, 3, 2, 8, 6, 4, 3, 1]
        for (index, offset) in offsets.enumerated() {
            try await store.append(
                AuditEvent(
                    companyID: company.id, at: now.addingTimeInterval(offset), actorID: admin.id, action: .unlock, outcome: .success,
                    reason: "e\(index)"))
            try await store.append(
                AuditEvent(companyID: other.id, at: now.addingTimeInterval(offset), actorID: otherAdmin.id, action: .unlock, outcome: .success))
        }
        var seen: [String?] = []
        var before: Int64?
        repeat {
            let page = try await store.auditEvents(
                AuditQuery(
                    companyID: company.id, action: .unlock, from: now.addingTimeInterval(1), to: now.addingTimeInterval(9), before: before,
                    limit: 3))
            #expect(page.allSatisfy { $0.companyID == company.id })
            seen += page.map(\.reason)
            before = page.count == 3 ? page.last!.id : nil
        } while before != nil
        let expected = offsets.enumerated().filter { (1..<9).contains($0.element) }
            .sorted { ($0.element, $0.offset) > ($1.element, $1.offset) }
            .map { "e\($0.offset)" }
        #expect(seen == expected)
        // Without a window, pages stay in id order.
        let byID = try await store.auditEvents(AuditQuery(companyID: company.id, action: .unlock, limit: 1000))
        #expect(byID.map(\.reason) == offsets.indices.reversed().map { "e\($0)" })
    }

    @Test("A time window's page is read through the time index, without sorting the window")
    func timeWindowsNeedNoSort() async throws {
        let (company, _) = try await makeCompany("Xi")
        let queries = [
            AuditQuery(companyID: company.id, from: now),
            AuditQuery(companyID: company.id, from: now, to: now.addingTimeInterval(3600)),
            AuditQuery(companyID: company.id, to: now, before: 42),
        ]
        for query in queries {
            let plan = try store.read { db in
                let statement = try SQLiteStore.auditRequest(query, db).makePreparedRequest(db).statement
                return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + statement.sql, arguments: statement.arguments).map { $0["detail"] as String }
            }
            #expect(plan.contains { $0.contains("auditEvent_time") }, "\(plan)")
            #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
        }
    }

    @Test func theAuditLogFiltersPagesAndCannotBeRewritten() async throws {
        let (company, admin) = try await makeCompany("Kappa")
        let lock = LockID("lock-kappa")!
        for index in 0..<25 {
            try await store.append(
                AuditEvent(
                    companyID: company.id, at: now.addingTimeInterval(Double(index)), actorID: admin.id, action: .unlock, lockID: lock,
                    outcome: index % 5 == 0 ? .success : .denied, reason: index % 5 == 0 ? "granted" : "level_too_low"))
        }
        let successes = try await store.auditEvents(AuditQuery(companyID: company.id, action: .unlock, outcome: .success))
        #expect(successes.count == 5)
        let page1 = try await store.auditEvents(AuditQuery(companyID: company.id, lockID: lock, limit: 10))
        let page2 = try await store.auditEvents(AuditQuery(companyID: company.id, lockID: lock, before: page1.last!.id, limit: 10))
        #expect(page1.count == 10 && page2.count == 10)
        #expect(page1.map(\.id) == page1.map(\.id).sorted(by: >))
        #expect(page1.last!.id > page2.first!.id)
        let window = try await store.auditEvents(
            AuditQuery(companyID: company.id, lockID: lock, from: now.addingTimeInterval(10), to: now.addingTimeInterval(15)))
        #expect(window.count == 5)
        #expect(try await store.auditEvents(AuditQuery(companyID: company.id, userID: admin.id)).count >= 25)

        // Not even someone with the database file can quietly change the log.
        let queue = try DatabaseQueue(path: "\(directory.path)/db/unlockit.sqlite")
        #expect(throws: (any Error).self) { try queue.write { try $0.execute(sql: "UPDATE auditEvent SET outcome = 'success'") } }
        #expect(throws: (any Error).self) { try queue.write { try $0.execute(sql: "DELETE FROM auditEvent") } }
    }

    /// The unlock path reads the room's authorization list only for the asking user.
    @Test func theUnlockContextNarrowsTheRoomsListToTheAskingUser() async throws {
        let (company, admin) = try await makeCompany("Iota")
        let listed = makeUser(company.id, "listed@iota.test")
        let other = makeUser(company.id, "other@iota.test")
        for user in [listed, other] { try await store.createUser(user, passwordHash: "hash", checking: nil, audit: audit(company.id)) }
        let room = try await makeRoom(company.id, "Vault")
        try await store.setAuthorization(user: listed.id, room: room.id, in: company.id, authorized: true, audit: audit(company.id))
        try await store.setAuthorization(user: admin.id, room: room.id, in: company.id, authorized: true, audit: audit(company.id))
        let lock = Lock(id: LockID("lock-iota")!, companyID: company.id, roomID: room.id, name: "L", state: .registered, createdAt: now)
        try await store.createLock(lock)

        let forListed = try await store.unlockContext(lock.id, in: company.id, for: listed.id)
        #expect(forListed?.room?.authorizedUsers == [listed.id])
        #expect(forListed?.room?.requiredLevel == 1)
        let forOther = try await store.unlockContext(lock.id, in: company.id, for: other.id)
        #expect(forOther?.room?.authorizedUsers == [])
        #expect(forOther?.room?.id == room.id)
        // The whole list is still what the room's own read returns.
        #expect(try await store.room(room.id, in: company.id)?.authorizedUsers == [listed.id, admin.id])

        // A lock without a room has no room in its context.
        let loose = Lock(id: LockID("lock-iota-2")!, companyID: company.id, roomID: nil, name: "L2", state: .registered, createdAt: now)
        try await store.createLock(loose)
        let looseContext = try await store.unlockContext(loose.id, in: company.id, for: listed.id)
        #expect(looseContext?.lock.id == loose.id)
        #expect(looseContext?.room == nil)
    }
}
