import Foundation
import HTTPTypes
import Logging
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

/// A device id is whatever an admin types in, and anyone who sees a lock can read the one on its
/// label: a lock not in service keeps its id from other companies only until its hold lapses
/// (``ServerConfiguration/lockIDLapse``, ``LockIDClaim``), so that a registration made first by
/// someone without the device cannot keep the id from its owner for good.
@Suite struct LockIDLapseTests {
    static let lapse = 600  // inside the harness's session lifetime

    @Test("Another company's registration never activated lapses: then the id can be registered, and the lock goes to the new company")
    func aLapsedRegistrationGoesToTheNextCompany() async throws {
        let harness = try Harness {
            $0.lockIDLapse = Self.lapse
            $0.takenLockIDsPerDay = 3
        }
        try await harness.runWithTwoCompanies { api, site, broker in
            let (owner, squatter, ownerRoom, squatterRoom) = (site.alpha, site.beta, site.alphaRoom, site.betaRoom)
            func register(_ admin: String, _ room: String, id: String = "lock-label", name: String = "Door") async throws -> API.Reply {
                try await api.post("/api/v1/locks", admin, ["id": id, "name": name, "roomId": room])
            }
            // Beta registers first the id on the label of Alpha's lock.
            #expect(try await register(squatter, squatterRoom, name: "Squatted").status == 201)
            #expect(try await register(owner, ownerRoom).code == "lock_id_taken")
            // As long as the lapse itself, it is kept; a second more, and it is not.
            harness.clock.advance(TimeInterval(Self.lapse))
            #expect(try await register(owner, ownerRoom).code == "lock_id_taken")
            harness.clock.advance(1)
            let accountsBefore = broker.commands.filter { $0 == "createClient" }.count
            let taken = try await register(owner, ownerRoom)
            #expect(taken.status == 201, "\(taken)")
            let mqtt = try #require(taken.json["mqtt"] as? [String: any Sendable])
            #expect(mqtt["username"] as? String == "lock-label" && (mqtt["password"] as? String)?.count == 64)
            // A new account for the lock: the squatter's password is worth nothing now.
            #expect(broker.commands.filter { $0 == "createClient" }.count == accountsBefore + 1)

            // The lock is Alpha's, as a new one: nothing of Beta's registration is in it or in Alpha's log.
            let lock = try await api.get("/api/v1/locks/lock-label", owner)
            #expect(lock.status == 200 && lock.string("name") == "Door" && lock.string("roomId") == ownerRoom && lock.string("state") == "registered")
            let registered = try await api.get("/api/v1/audit?action=register_lock", owner).items
            #expect(registered.count == 1 && registered.first?["changes"] == nil)
            #expect(!(try await api.get("/api/v1/audit", owner).text.contains("Squatted")))
            // Beta's is gone; its log says that, and not who took it.
            #expect(try await api.get("/api/v1/locks/lock-label", squatter).code == "lock_not_found")
            #expect(try await api.get("/api/v1/locks", squatter).items.isEmpty)
            let released = try await api.get("/api/v1/audit?action=release_lock", squatter).items
            #expect(released.count == 1, "\(released)")
            #expect(released.first?["lockId"] as? String == "lock-label" && released.first?["roomId"] as? String == squatterRoom)
            #expect(released.first?["reason"] as? String == "registered_elsewhere" && released.first?["outcome"] as? String == "success")
            #expect(released.first?["actorId"] == nil)
            #expect(!(try await api.get("/api/v1/audit", squatter).text.contains("Alpha")))
            // Alpha's registration is recent: Beta cannot take it back.
            #expect(try await register(squatter, squatterRoom).code == "lock_id_taken")

            // The lapsed id was not counted against Alpha's budget of three: the third answer about
            // another company's id still fits, and only the fourth is refused.
            #expect(try await register(squatter, squatterRoom, id: "lock-beta").status == 201)
            #expect(try await register(owner, ownerRoom, id: "lock-beta").code == "lock_id_taken")
            #expect(try await register(owner, ownerRoom, id: "lock-beta").code == "too_many_taken_lock_ids")
        }
    }

    @Test(
        "An active lock keeps its id from other companies however long ago; a retired one for the lapse after its retirement; its own company's never lapses"
    )
    func activeRetiredAndOwnLocks() async throws {
        let harness = try Harness { $0.lockIDLapse = Self.lapse }
        let (accounts, _) = AgreeableBroker.make()
        let alphaID = try await harness.bootstrapCompany("Alpha", email: "admin@alpha.test")
        try await harness.run(over: try harness.services(accounts: accounts)) { api in
            let alpha = try await api.session("admin@alpha.test", alphaID.password)
            let beta = try await api.company("Beta")
            let alphaRoom = try await api.createRoom(alpha, "Lab")
            let betaRoom = try await api.createRoom(beta, "Hall")
            func register(_ admin: String, _ id: String, _ room: String) async throws -> API.Reply {
                try await api.post("/api/v1/locks", admin, ["id": id, "name": "Door", "roomId": room])
            }
            _ = try await harness.activeLock("lock-active", company: alphaID.id, room: alphaRoom)
            _ = try await harness.activeLock("lock-retired", company: alphaID.id, room: alphaRoom)
            #expect(try await register(alpha, "lock-unused", alphaRoom).status == 201)
            // Retired half a lapse later: its hold counts from then.
            harness.clock.advance(TimeInterval(Self.lapse / 2))
            #expect(try await api.post("/api/v1/locks/lock-retired/retire", alpha).status == 200)
            harness.clock.advance(TimeInterval(Self.lapse / 2 + 1))
            #expect(try await register(beta, "lock-retired", betaRoom).code == "lock_id_taken")
            #expect(try await register(beta, "lock-active", betaRoom).code == "lock_id_taken")
            // Alpha's own registration, never activated, is kept from Alpha itself (the way back is a
            // new broker password); for Beta it has lapsed.
            #expect(try await register(alpha, "lock-unused", alphaRoom).code == "lock_id_taken")
            #expect(try await register(beta, "lock-unused", betaRoom).status == 201)

            harness.clock.advance(TimeInterval(Self.lapse / 2))
            #expect(try await register(beta, "lock-active", betaRoom).code == "lock_id_taken")
            #expect(try await register(beta, "lock-retired", betaRoom).status == 201)
            #expect(try await api.get("/api/v1/locks/lock-active", alpha).string("state") == "active")
            #expect(try await api.get("/api/v1/locks/lock-retired", alpha).code == "lock_not_found")
            #expect(try await api.get("/api/v1/audit?action=release_lock", alpha).items.count == 2)
        }
    }

    @Test("Retiring a lock never activated and registering it again does not restart its hold")
    func retiringAndRegisteringAgainKeepsTheLapse() async throws {
        let harness = try Harness { $0.lockIDLapse = Self.lapse }
        try await harness.runWithTwoCompanies { api, site, _ in
            let (owner, squatter, ownerRoom, squatterRoom) = (site.alpha, site.beta, site.alphaRoom, site.betaRoom)
            #expect(try await api.post("/api/v1/locks", squatter, ["id": "lock-label", "name": "Door", "roomId": squatterRoom]).status == 201)
            harness.clock.advance(TimeInterval(Self.lapse - 1))
            #expect(try await api.post("/api/v1/locks/lock-label/retire", squatter).status == 200)
            #expect(try await api.post("/api/v1/locks", squatter, ["id": "lock-label", "name": "Again", "roomId": squatterRoom]).status == 201)
            harness.clock.advance(2)
            let taken = try await api.post("/api/v1/locks", owner, ["id": "lock-label", "name": "Door", "roomId": ownerRoom])
            #expect(taken.status == 201, "\(taken)")
        }
    }

    @Test("A takeover whose broker account cannot be made has still released the lapsed lock, with its event; the id is free")
    func aTakeoverTheBrokerFails() async throws {
        let harness = try Harness { $0.lockIDLapse = Self.lapse }
        let silent = BrokerAccounts(link: BrokerAccountsTests.SilentLink(), timeout: .milliseconds(200), logger: Logger(label: "test"))
        let betaID = try await harness.bootstrapCompany("Beta", email: "admin@beta.test")
        try await harness.run(over: try harness.services(accounts: silent)) { api in
            let alpha = try await api.company("Alpha")
            let beta = try await api.session("admin@beta.test", betaID.password)
            let alphaRoom = try await api.createRoom(alpha, "Lab")
            let betaRoom = try await api.createRoom(beta, "Hall")
            try await harness.store.createLock(
                Lock(
                    id: LockID("lock-label")!, companyID: betaID.id, roomID: RoomID(betaRoom)!, name: "Door", state: .registered,
                    createdAt: harness.clock.now))
            harness.clock.advance(TimeInterval(Self.lapse + 1))
            let failed = try await api.post("/api/v1/locks", alpha, ["id": "lock-label", "name": "Door", "roomId": alphaRoom])
            #expect(failed.status == 503 && failed.code == "broker_unavailable", "\(failed)")
            #expect(try await api.get("/api/v1/locks/lock-label", beta).code == "lock_not_found")
            #expect(try await api.get("/api/v1/audit?action=release_lock", beta).items.count == 1)
            #expect(try await api.get("/api/v1/locks/lock-label", alpha).code == "lock_not_found")
            #expect(
                try await harness.store.lockIDHolder(LockID("lock-label")!, for: CompanyID(unchecked: "x"), lapsedBefore: harness.clock.now) == nil)
        }
    }
}
