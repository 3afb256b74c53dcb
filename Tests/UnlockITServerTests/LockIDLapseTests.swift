import Foundation
import HTTPTypes
import Testing
import UnlockITCore

@testable import UnlockITServer

/// A device id is whatever an admin types in, and anyone who sees a lock can read the one on its
/// label: a registration that was never activated keeps the id from other companies only until it
/// lapses (``ServerConfiguration/unactivatedLockLapse``), so that one made first by someone without
/// the device cannot keep it from its owner for good.
@Suite struct LockIDLapseTests {
    static let lapse = 600  // inside the harness's session lifetime

    @Test("Another company's registration never activated lapses: then the id can be registered, and the lock is taken over")
    func aLapsedRegistrationIsTakenOver() async throws {
        let harness = try Harness {
            $0.unactivatedLockLapse = Self.lapse
            $0.takenLockIDsPerDay = 5
        }
        let (accounts, broker) = AgreeableBroker.make()
        try await harness.run(over: try harness.services(accounts: accounts)) { api in
            let owner = try await api.company("Alpha")
            let squatter = try await api.company("Beta")
            let ownerRoom = try await api.createRoom(owner, "Lab")
            let squatterRoom = try await api.createRoom(squatter, "Hall")
            func register(_ admin: String, _ room: String, name: String = "Door") async throws -> API.Reply {
                try await api.post("/api/v1/locks", admin, ["id": "lock-label", "name": name, "roomId": room])
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
        }
    }

    @Test("A lock that was ever activated keeps its id from other companies however long ago, retired too; its own company's never lapses")
    func activatedAndOwnLocksKeepTheirIDs() async throws {
        let harness = try Harness { $0.unactivatedLockLapse = Self.lapse }
        let (accounts, _) = AgreeableBroker.make()
        let alphaID = try await harness.bootstrapCompany("Alpha", email: "admin@alpha.test")
        try await harness.run(over: try harness.services(accounts: accounts)) { api in
            let alpha = try await api.session("admin@alpha.test", alphaID.password)
            let beta = try await api.company("Beta")
            let alphaRoom = try await api.createRoom(alpha, "Lab")
            let betaRoom = try await api.createRoom(beta, "Hall")
            _ = try await harness.activeLock("lock-active", company: alphaID.id, room: alphaRoom)
            _ = try await harness.activeLock("lock-retired", company: alphaID.id, room: alphaRoom)
            #expect(try await api.post("/api/v1/locks/lock-retired/retire", alpha).status == 200)
            #expect(try await api.post("/api/v1/locks", alpha, ["id": "lock-unused", "name": "Spare", "roomId": alphaRoom]).status == 201)

            harness.clock.advance(TimeInterval(30 * Self.lapse))
            let alphaAgain = try await api.session("admin@alpha.test", "a brand new password")  // the old session expired
            let betaAgain = try await api.session("admin@beta.test", "a brand new password")
            for id in ["lock-active", "lock-retired"] {
                let refused = try await api.post("/api/v1/locks", betaAgain, ["id": id, "name": "Door", "roomId": betaRoom])
                #expect(refused.code == "lock_id_taken", "\(id): \(refused)")
            }
            // Alpha's own registration, never activated, is kept from Alpha itself (the way back is a
            // new broker password); for Beta it has lapsed.
            #expect(
                try await api.post("/api/v1/locks", alphaAgain, ["id": "lock-unused", "name": "Spare", "roomId": alphaRoom]).code == "lock_id_taken")
            #expect(try await api.post("/api/v1/locks", betaAgain, ["id": "lock-unused", "name": "Door", "roomId": betaRoom]).status == 201)
            #expect(try await api.get("/api/v1/locks/lock-active", alphaAgain).string("state") == "active")
            #expect(try await api.get("/api/v1/locks/lock-retired", alphaAgain).string("state") == "retired")
        }
    }
}
