import Foundation
import HTTPTypes
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

/// Every admin change checks its admin again in its own write's transaction (``AdminCheck``): the
/// check as the request arrives is not enough, since the write may wait behind others (the writer's
/// turn, the audit log's flush), and an admin demoted meanwhile must not finish it, nor undo their
/// own demotion with a change sent before it.
@Suite(.serialized) struct AdminWriteCheckTests {
    @Test(
        "An admin demoted while their change waits for the database does not make it",
        arguments: ["update user", "delete user", "create room", "update room", "delete room", "authorize", "update lock", "unlink"])
    func aDemotedAdminsChangeIsRefused(change: String) async throws {
        let harness = try Harness()
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let admin = try await api.session("admin@acme.test", initial)
            let me = try #require(try await harness.store.credentials(email: "admin@acme.test")).user
            let company = me.companyID
            let room = try await api.createRoom(admin, "Lab")
            let empty = try await api.createRoom(admin, "Empty")
            let created = try await api.post(
                "/api/v1/users", admin, ["email": "dave@acme.test", "name": "Dave", "role": "employee", "securityLevel": 1])
            let dave = try #require((created.json["user"] as? [String: any Sendable])?["id"] as? String, "\(created)")
            let lock = try #require(LockID("door-1"))
            try await harness.store.createLock(
                Lock(id: lock, companyID: company, roomID: RoomID(room), name: "Door", state: .registered, createdAt: harness.clock.now))
            let events = try await harness.store.auditEvents(AuditQuery(companyID: company)).count

            // The demotion is written and not yet committed as the change arrives: the change's
            // session check sees an admin; its write, which waits for the demotion's commit, does not.
            let reply = try await harness.whileUncommitted(#"UPDATE "user" SET role = 'employee' WHERE id = ?"#, [me.id.rawValue]) {
                // Set up as meant: the demotion is not seen yet (the cases take turns, so that none
                // starts after its demotion's commit for want of a thread).
                let seen = try await harness.store.session(tokenHash: SessionTokens.hash(admin))?.user.role
                try #require(seen == .admin, "the demotion was committed before the change was sent")
                return switch change {
                case "update user": try await api.call(.patch, "/api/v1/users/\(dave)", token: admin, raw: #"{"role":"admin"}"#)
                case "delete user": try await api.call(.delete, "/api/v1/users/\(dave)", token: admin, raw: nil)
                case "create room": try await api.post("/api/v1/rooms", admin, ["name": "Vault", "type": "office"])
                case "update room": try await api.call(.patch, "/api/v1/rooms/\(room)", token: admin, raw: #"{"requiredLevel":0}"#)
                case "delete room": try await api.call(.delete, "/api/v1/rooms/\(empty)", token: admin, raw: nil)
                case "authorize": try await api.call(.put, "/api/v1/rooms/\(room)/authorized-users/\(dave)", token: admin, raw: nil)
                case "update lock": try await api.call(.patch, "/api/v1/locks/\(lock)", token: admin, raw: #"{"name":"Renamed"}"#)
                default: try await api.call(.delete, "/api/v1/users/\(dave)/identities", token: admin, raw: nil)
                }
            }
            #expect(reply.status == 403 && reply.code == "admin_required", "\(change): \(reply)")
            // Nothing was written, not even an event.
            #expect(try await harness.store.auditEvents(AuditQuery(companyID: company)).count == events, "\(change)")
            let daveNow = try await harness.store.user(try #require(UserID(dave)), in: company)
            #expect(daveNow?.role == .employee, "\(change)")
            let rooms = try await harness.store.rooms(in: company)
            #expect(rooms.map(\.name).sorted() == ["Empty", "Lab"], "\(change)")
            #expect(rooms.first { $0.name == "Lab" }.map { $0.requiredLevel == 1 && $0.authorizedUsers.isEmpty } == true, "\(change)")
            #expect(try await harness.store.lock(lock, in: company)?.name == "Door", "\(change)")
        }
    }
}
