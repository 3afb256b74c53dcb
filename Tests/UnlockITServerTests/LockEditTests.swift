import Foundation
import HTTPTypes
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

@Suite struct LockEditTests {
    @Test("A lock is renamed or moved to another room of its company, audited; never into another company's room")
    func renameAndMove() async throws {
        let harness = try Harness()
        try await harness.run { api in
            let admin = try await api.company("Mover")
            let other = try await api.company("Elsewhere")
            let lab = try await api.createRoom(admin, "Lab")
            let vault = try await api.createRoom(admin, "Vault", requiredLevel: 7)
            let foreign = try await api.createRoom(other, "Foreign")
            let company = try #require(try await harness.store.credentials(email: "admin@mover.test")?.0.companyID)
            let id = try #require(LockID("door-move"))
            try await harness.store.createLock(
                Lock(id: id, companyID: company, roomID: RoomID(lab), name: "Door", state: .registered, createdAt: harness.clock.now))
            func patch(_ token: String, _ body: [String: any Sendable], lock: String = "door-move") async throws -> API.Reply {
                try await api.call(.patch, "/api/v1/locks/\(lock)", token: token, json: body)
            }

            let moved = try await patch(admin, ["name": "Vault door", "roomId": vault])
            #expect(moved.status == 200 && moved.string("name") == "Vault door" && moved.string("roomId") == vault, "\(moved)")
            // Another company's room is not found, as any room it cannot see; nothing changes.
            let sneaky = try await patch(admin, ["roomId": foreign])
            #expect(sneaky.status == 404 && sneaky.code == "room_not_found", "\(sneaky)")
            // Another company's lock is not found either.
            #expect(try await patch(other, ["name": "Mine"]).code == "lock_not_found")
            #expect(try await patch(admin, ["name": ""]).code == "invalid_field")
            #expect(try await patch(admin, ["state": "active"]).code == "unknown_field")
            #expect(try await api.get("/api/v1/locks/door-move", admin).string("roomId") == vault)

            let event = try #require(try await api.get("/api/v1/audit?action=update_lock", admin).items.first)
            #expect(event["lockId"] as? String == "door-move" && event["roomId"] as? String == vault)
            let changes = (event["changes"] as? [[String: any Sendable]] ?? []).map {
                [$0["field"] as? String, $0["from"] as? String, $0["to"] as? String]
            }
            #expect(changes == [["name", "Door", "Vault door"], ["roomId", lab, vault]])

            #expect(try await api.post("/api/v1/locks/door-move/retire", admin).status == 503)  // the harness has no broker
            try await harness.store.retireLock(
                id, in: company, at: harness.clock.now,
                audit: AuditEvent(
                    companyID: company, at: harness.clock.now, actorID: nil, action: .retireLock, outcome: .success))
            #expect(try await patch(admin, ["name": "Gone"]).code == "lock_retired")
        }
    }
}
