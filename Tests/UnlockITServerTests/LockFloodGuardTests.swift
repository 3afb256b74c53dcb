import Foundation
import SiteHarness
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

/// A lock whose broker account floods its topics has it shut off: a new password nobody holds, in
/// the lock's turn, in its company's log. (End to end, with a real broker: LockProtocolEndToEndTests.)
@Suite struct LockFloodGuardTests {
    @Test("A flooding lock's account gets a password nobody holds, in the lock's turn, and its company's log says why")
    func aFloodingLocksAccountIsShutOffInItsTurn() async throws {
        let harness = try Harness()
        let (accounts, broker) = AgreeableBroker.make()
        let services = try harness.services(accounts: accounts)
        try await harness.withDoor(over: services) { api, admin, _, _, door in
            // Another change of the same lock holds its turn: the guard waits for it.
            #expect(await services.lockAccountTurns.acquire(door, deadline: .now + .seconds(5)))
            let shutOff = Task { await LockFloodGuard(services: services).shutOff(Self.report(door, services)) }
            try await Task.sleep(for: .milliseconds(300))
            #expect(broker.commands.isEmpty)
            services.lockAccountTurns.release(door)
            #expect(await shutOff.value == .shutOff)
            #expect(broker.commands == ["getClient", "modifyClient"])

            let events = try await api.get("/api/v1/audit?lock=\(door)", admin)
            #expect(events.items.count == 1, "\(events.items)")
            let event = try #require(events.items.first)
            #expect(event["action"] as? String == "reset_lock_password" && event["reason"] as? String == "message_flood", "\(event)")
            #expect(event["outcome"] as? String == "success" && event["actorId"] == nil, "\(event)")
            // Offline from now, until the device has a password an admin asked for.
            #expect(services.gateway.presence(of: door)?.online != true)
        }
    }

    @Test("A report of an account an admin replaced while the guard waited for the lock's turn is let go")
    func aStaleReportIsLetGo() async throws {
        let harness = try Harness()
        let (accounts, broker) = AgreeableBroker.make()
        let services = try harness.services(accounts: accounts)
        try await harness.withDoor(over: services) { api, admin, _, _, door in
            let report = Self.report(door, services)
            #expect(await services.lockAccountTurns.acquire(door, deadline: .now + .seconds(5)))
            let shutOff = Task { await LockFloodGuard(services: services).shutOff(report) }
            // The admin's new broker password, in the turn the guard waits for: shown to the admin, it must keep working.
            try await Task.sleep(for: .milliseconds(300))
            services.gateway.passwordRenewed(door)
            services.lockAccountTurns.release(door)
            #expect(await shutOff.value == .stale)
            #expect(broker.commands.isEmpty)
            let events = try await api.get("/api/v1/audit?lock=\(door)", admin)
            #expect(events.items.isEmpty, "\(events.items)")
        }
    }

    @Test("A shut-off still waiting for the lock's turn when the server stops leaves the account alone")
    func aShutOffLeftAtShutdownTouchesNothing() async throws {
        let harness = try Harness()
        let (accounts, broker) = AgreeableBroker.make()
        let services = try harness.services(accounts: accounts)
        try await harness.withDoor(over: services) { _, _, _, _, door in
            #expect(await services.lockAccountTurns.acquire(door, deadline: .now + .seconds(5)))
            let shutOff = Task { await LockFloodGuard(services: services).shutOff(Self.report(door, services)) }
            try await Task.sleep(for: .milliseconds(300))
            shutOff.cancel()
            services.lockAccountTurns.release(door)
            #expect(await shutOff.value == .failed)
            #expect(broker.commands.isEmpty)
        }
    }

    @Test("A shut-off the broker did not make is tried again")
    func aFailedShutOffIsTriedAgain() async throws {
        let harness = try Harness()
        let (accounts, broker) = AgreeableBroker.make()
        let services = try harness.services(accounts: accounts)
        try await harness.withDoor(over: services) { api, admin, _, _, door in
            broker.fail("modifyClient", times: 2)
            let guardian = LockFloodGuard(services: services, retryDelay: .milliseconds(50))
            #expect(await guardian.shutOff(Self.report(door, services)) == .shutOff)
            #expect(broker.commands == Array(repeating: ["getClient", "modifyClient"], count: 3).flatMap { $0 })
            let events = try await api.get("/api/v1/audit?lock=\(door)", admin).items
            #expect(events.count == 1 && events.first?["reason"] as? String == "message_flood", "\(events)")
        }
    }

    @Test("No account is touched for an id no company's lock has in service")
    func onlyARegisteredLocksAccountIsShutOff() async throws {
        let harness = try Harness()
        let (accounts, broker) = AgreeableBroker.make()
        let services = try harness.services(accounts: accounts)
        try await harness.withDoor(over: services) { api, admin, room, company, _ in
            let retired = try #require(LockID("door-2"))
            try await harness.store.createLock(
                Lock(id: retired, companyID: company, roomID: RoomID(room), name: "Old door", state: .retired, createdAt: harness.clock.now))
            let guardian = LockFloodGuard(services: services)
            #expect(await guardian.shutOff(Self.report(retired, services)) == .stale)
            #expect(await guardian.shutOff(Self.report(try #require(LockID("no-such-lock")), services)) == .stale)
            #expect(broker.commands.isEmpty)
            let events = try await api.get("/api/v1/audit?action=reset_lock_password", admin)
            #expect(events.items.isEmpty, "\(events.items)")
        }
    }

    /// A flood of `lock`'s current account, as the gateway reports one.
    static func report(_ lock: LockID, _ services: AppServices) -> LockGateway.FloodReport {
        LockGateway.FloodReport(lock: lock, generation: services.gateway.accountGeneration(lock))
    }
}
