import SiteHarness
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

extension Harness {
    /// Runs `body` over `services` on Acme's site with its admin's session, the room Lab, the
    /// company's id, and the device id door-1: a lock registered in Lab, unless `registered` is false.
    func withDoor(
        over services: AppServices, registered: Bool = true,
        _ body: @Sendable (_ api: API, _ admin: String, _ room: String, _ company: CompanyID, _ id: LockID) async throws -> Void
    ) async throws {
        let initial = try await bootstrap("Acme", email: "admin@acme.test")
        try await run(over: services) { api in
            let admin = try await api.session("admin@acme.test", initial)
            let room = try await api.createRoom(admin, "Lab")
            let company = try #require(try await store.credentials(email: "admin@acme.test")?.0.companyID)
            let id = try #require(LockID("door-1"))
            if registered {
                try await store.createLock(
                    Lock(id: id, companyID: company, roomID: RoomID(room), name: "Door", state: .registered, createdAt: clock.now))
            }
            try await body(api, admin, room, company, id)
        }
    }
}
