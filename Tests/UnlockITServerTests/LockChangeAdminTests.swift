import Foundation
import SiteHarness
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

/// A change to a lock's broker account, or its activation, waits for its turn (up to 30 s) and for
/// the broker: the admin who asked is checked again before the broker is touched, and the write
/// checks once more.
@Suite struct LockChangeAdminTests {
    static let setupCode = "7KQ2-M9XD-4RTA-WZ3C"

    @Test(
        "An admin signed out while their lock change waits for its turn does not finish it",
        arguments: ["register", "activate", "retire", "broker-password"])
    func aSignedOutAdminsChangeStops(change: String) async throws {
        let harness = try Harness()
        let services = try harness.services()
        try await harness.withDoor(over: services, registered: change != "register") { api, admin, room, company, id in
            // Another change of the same lock holds the turn while this one is asked for.
            #expect(await services.lockAccountTurns.acquire(id, deadline: .now + .seconds(5)))
            async let reply: API.Reply =
                switch change {
                case "register": api.post("/api/v1/locks", admin, ["id": id.rawValue, "name": "Door", "roomId": room])
                case "retire": api.post("/api/v1/locks/\(id)/retire", admin, [:])
                case "activate": api.post("/api/v1/locks/\(id)/activate", admin, ["setupCode": Self.setupCode])
                default: api.post("/api/v1/locks/\(id)/broker-password", admin, [:])
                }
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await api.post("/api/v1/auth/sign-out", admin).status == 204)
            services.lockAccountTurns.release(id)
            // Refused as the session it was asked in has ended, not tried at the broker (503).
            let answer = try await reply
            #expect(answer.status == 401 && answer.code == "unauthenticated", "\(answer)")

            let other = try await api.session("admin@acme.test", "a brand new password")
            let lock = try await harness.store.lock(id, in: company)
            #expect(lock?.state == (change == "register" ? nil : .registered))
            let events = try await api.get("/api/v1/audit?lock=\(id)", other)
            #expect(events.items.isEmpty, "\(events.items)")
        }
    }

    @Test("An admin signed out while the broker sets a lock's new password is not shown it")
    func aNewBrokerPasswordIsNotShownToAnAdminWhoseSessionEnded() async throws {
        let harness = try Harness()
        let (accounts, broker) = AgreeableBroker.make()
        try await harness.withDoor(over: try harness.services(accounts: accounts)) { api, admin, _, _, id in
            broker.delay("modifyClient", by: .milliseconds(800))
            async let reply = api.post("/api/v1/locks/\(id)/broker-password", admin, [:])
            try await Network.waitUntil("the broker asked") { broker.commands.contains("modifyClient") }
            #expect(try await api.post("/api/v1/auth/sign-out", admin).status == 204)
            let answer = try await reply
            #expect(answer.status == 401 && answer.code == "unauthenticated", "\(answer)")
            #expect(Set(answer.json.keys).isDisjoint(with: ["mqtt", "username", "password"]), "\(answer)")
            #expect(answer.text.firstMatch(of: /[0-9a-f]{64}/) == nil, "\(answer)")
            // The broker did change it: the log says so, and by whom.
            let other = try await api.session("admin@acme.test", "a brand new password")
            let events = try await api.get("/api/v1/audit?action=reset_lock_password", other)
            #expect(events.items.count == 1 && events.items.first?["outcome"] as? String == "success", "\(events.items)")
        }
    }

    @Test(
        "Another company's lock answers at once, not after that company's change of it",
        arguments: ["register", "activate", "retire", "broker-password"])
    func anotherCompanysLockIsNotWaitedFor(change: String) async throws {
        let harness = try Harness()
        let services = try harness.services()
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        _ = try await harness.bootstrap("Globex", email: "admin@globex.test")
        let globex = try #require(try await harness.store.credentials(email: "admin@globex.test")?.0.companyID)
        let id = try #require(LockID("door-1"))
        try await harness.store.createLock(
            Lock(id: id, companyID: globex, roomID: nil, name: "Door", state: .registered, createdAt: harness.clock.now))
        try await harness.run(over: services) { api in
            let admin = try await api.session("admin@acme.test", initial)
            // Globex's own change of its lock holds the turn (its broker commands may take seconds).
            #expect(await services.lockAccountTurns.acquire(id, deadline: .now + .seconds(5)))
            let answer = LockedBox<API.Reply?>(nil)
            let room = try await api.createRoom(admin, "Lab")
            let asked = Task {
                answer.set(
                    change == "register"
                        ? try await api.post("/api/v1/locks", admin, ["id": id.rawValue, "name": "Door", "roomId": room])
                        : try await api.post("/api/v1/locks/\(id)/\(change)", admin, change == "activate" ? ["setupCode": Self.setupCode] : [:]))
            }
            try? await Network.waitUntil("Acme's answer", timeout: .seconds(5)) { answer.get() != nil }
            let whileHeld = answer.get()
            services.lockAccountTurns.release(id)
            try await asked.value
            // As a missing lock would: 404, or for a registration the id's 409.
            let expected = change == "register" ? (409, "lock_id_taken") : (404, "lock_not_found")
            #expect(whileHeld?.status == expected.0 && whileHeld?.code == expected.1, "\(String(describing: answer.get()))")
            #expect(try await harness.store.lock(id, in: globex)?.state == .registered)
        }
    }
}
