import Foundation
import HTTPTypes
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

@Suite(.timeLimit(.minutes(10)))
struct TenantIsolationTests {
    @Test("An admin of company A gets 404 on every read and write of company B's users, rooms, locks and audit events")
    func otherCompaniesAreInvisible() async throws {
        let harness = try Harness()
        try await harness.run { api in
            let adminA = try await api.company("Alpha")
            let adminB = try await api.company("Beta")
            let userB = try await api.createUser(adminB, "emp@beta.test", level: 2)
            let roomB = try await api.createRoom(adminB, "Beta Lab")
            let roomA = try await api.createRoom(adminA, "Alpha Lab")
            let userA = try await api.createUser(adminA, "emp@alpha.test", level: 2)
            // A lock of company B, stored directly (no broker in this test).
            let lockB = LockID("lock-beta-1")!
            let companyB = try await harness.store.user(UserID(userB)!)!.companyID
            try await harness.store.createLock(
                Lock(id: lockB, companyID: companyB, roomID: RoomID(roomB)!, name: "B door", state: .registered, createdAt: harness.clock.now))
            _ = try await api.post("/api/v1/locks/\(lockB)/unlock", adminB)

            let requests: [(HTTPRequest.Method, String, [String: any Sendable]?)] = [
                (.get, "/api/v1/users/\(userB)", nil),
                (.patch, "/api/v1/users/\(userB)", ["securityLevel": 9]),
                (.patch, "/api/v1/users/\(userB)", ["email": "admin@alpha.test"]),
                (.delete, "/api/v1/users/\(userB)", nil),
                (.post, "/api/v1/users/\(userB)/password", [:]),
                (.get, "/api/v1/rooms/\(roomB)", nil),
                (.patch, "/api/v1/rooms/\(roomB)", ["name": "Mine now"]),
                (.delete, "/api/v1/rooms/\(roomB)", nil),
                (.put, "/api/v1/rooms/\(roomB)/authorized-users/\(userA)", nil),
                (.delete, "/api/v1/rooms/\(roomB)/authorized-users/\(userA)", nil),
                (.put, "/api/v1/rooms/\(roomA)/authorized-users/\(userB)", nil),
                (.delete, "/api/v1/rooms/\(roomA)/authorized-users/\(userB)", nil),
                (.get, "/api/v1/locks/\(lockB)", nil),
                (.patch, "/api/v1/locks/\(lockB)", ["name": "Mine now"]),
                (.post, "/api/v1/locks/\(lockB)/activate", ["setupCode": "7KQ2-M9XD-4RTA-WZ3C"]),
                (.post, "/api/v1/locks/\(lockB)/retire", [:]),
                (.post, "/api/v1/locks/\(lockB)/broker-password", [:]),
                (.post, "/api/v1/locks/\(lockB)/unlock", [:]),
                (.post, "/api/v1/locks", ["id": "lock-in-b-room", "name": "x", "roomId": roomB]),
            ]
            for (method, path, body) in requests {
                let reply = try await api.call(method, path, token: adminA, json: body)
                #expect(reply.status == 404, "\(method) \(path): \(reply)")
                #expect(reply.code?.hasSuffix("_not_found") == true, "\(method) \(path)")
            }
            // The same answer as for something that does not exist at all.
            let missing = try await api.get("/api/v1/users/\(UserID.generate())", adminA)
            let foreign = try await api.get("/api/v1/users/\(userB)", adminA)
            #expect(missing.body == foreign.body)
            // On a room's list, the one that is missing to A is named: B's room, or B's user in A's room.
            for (room, user, code) in [
                (roomB, userA, "room_not_found"), (roomA, userB, "user_not_found"), (roomA, UserID.generate().rawValue, "user_not_found"),
            ] {
                for method in [HTTPRequest.Method.put, .delete] {
                    let reply = try await api.call(method, "/api/v1/rooms/\(room)/authorized-users/\(user)", token: adminA, json: nil)
                    #expect(reply.status == 404 && reply.code == code, "\(method) \(room) \(user): \(reply)")
                }
            }

            // Lists and the audit log show only A's.
            #expect(try await api.get("/api/v1/users", adminA).items.allSatisfy { ($0["email"] as? String)?.hasSuffix("alpha.test") == true })
            #expect(try await api.get("/api/v1/rooms", adminA).items.count == 1)
            #expect(try await api.get("/api/v1/locks", adminA).items.isEmpty)
            // Only A's own attempts on that id appear in A's log, never B's.
            let adminAID = (try await api.get("/api/v1/me", adminA).json["user"] as? [String: any Sendable])?["id"] as? String
            let lockAudit = try await api.get("/api/v1/audit?lock=\(lockB)", adminA).items
            #expect(!lockAudit.isEmpty)
            #expect(lockAudit.allSatisfy { ($0["actorId"] as? String) == adminAID && ($0["reason"] as? String) == "lock_not_found" })
            #expect(try await api.get("/api/v1/audit?user=\(userB)", adminA).items.isEmpty)
            #expect(try await api.get("/api/v1/audit?room=\(roomB)", adminA).items.isEmpty)
            let auditA = try await api.get("/api/v1/audit?limit=1000", adminA).items
            #expect(!auditA.contains { ($0["subjectId"] as? String) == userB || ($0["roomId"] as? String) == roomB })

            // B's things are untouched.
            #expect(try await api.get("/api/v1/users/\(userB)", adminB).json["securityLevel"] as? Int == 2)
            #expect(try await api.get("/api/v1/rooms/\(roomB)", adminB).string("name") == "Beta Lab")
            #expect(try await api.get("/api/v1/rooms/\(roomA)", adminA).json["authorizedUsers"] as? [String] == [])
        }
    }

    @Test("Employees get 403 on admin endpoints and can use their own")
    func employeesAreNotAdmins() async throws {
        let harness = try Harness()
        try await harness.run { api in
            let admin = try await api.company("Gamma")
            _ = try await api.createUser(admin, "emp@gamma.test", level: 1)
            let employee = try await api.session("emp@gamma.test", "initial password 1")
            for (method, path) in [
                (HTTPRequest.Method.get, "/api/v1/users"), (.post, "/api/v1/users"), (.get, "/api/v1/rooms"), (.post, "/api/v1/rooms"),
                (.get, "/api/v1/locks"), (.post, "/api/v1/locks"), (.get, "/api/v1/audit"), (.post, "/api/v1/users/import"),
                (.patch, "/api/v1/locks/lock-x"),
            ] {
                let reply = try await api.call(method, path, token: employee, json: [:])
                #expect(reply.status == 403, "\(method) \(path)")
                #expect(reply.code == "admin_required", "\(method) \(path)")
            }
            #expect(try await api.get("/api/v1/me", employee).status == 200)
            #expect(try await api.get("/api/v1/me/access", employee).status == 200)
        }
    }
}
