import Foundation
import HTTPTypes
import Testing

@testable import UnlockITServer

/// Who could open what, and since when, is answered from the log: an admin change records the
/// fields it set, with their values before and after, from the rows the store wrote.
@Suite struct AuditChangesTests {
    func changes(_ event: [String: any Sendable]) -> [String: [String?]] {
        let list = event["changes"] as? [[String: any Sendable]] ?? []
        return Dictionary(uniqueKeysWithValues: list.map { ($0["field"] as? String ?? "", [$0["from"] as? String, $0["to"] as? String]) })
    }

    @Test("Creating, changing and deleting a user or a room records what it set")
    func adminChangesRecordWhatTheySet() async throws {
        let harness = try Harness()
        try await harness.run { api in
            let admin = try await api.company("Ledger")
            let clerk = try await api.createUser(admin, "clerk@ledger.test", level: 1)
            // Only what differs: the name sent again unchanged is not a change.
            let promoted = try await api.call(
                .patch, "/api/v1/users/\(clerk)", token: admin, json: ["role": "admin", "securityLevel": 9, "name": "clerk@ledger.test"])
            #expect(promoted.status == 200, "\(promoted)")
            let room = try await api.createRoom(admin, "Vault", requiredLevel: 5)
            #expect(try await api.call(.patch, "/api/v1/rooms/\(room)", token: admin, raw: #"{"requiredLevel":null}"#).status == 200)
            #expect(try await api.call(.patch, "/api/v1/users/\(clerk)", token: admin, json: ["role": "employee"]).status == 200)
            #expect(try await api.call(.delete, "/api/v1/users/\(clerk)", token: admin).status == 204)
            #expect(try await api.call(.delete, "/api/v1/rooms/\(room)", token: admin).status == 204)

            let log = try await api.get("/api/v1/audit?limit=100", admin).items
            func events(_ action: String) -> [[String: any Sendable]] { log.filter { $0["action"] as? String == action }.reversed() }
            let created = try #require(events("create_user").first)
            #expect(changes(created)["role"] == [nil, "employee"])
            #expect(changes(created)["securityLevel"] == [nil, "1"])
            #expect(changes(created)["email"] == [nil, "clerk@ledger.test"])
            let updates = events("update_user")
            #expect(updates.count == 2)
            #expect(changes(updates[0]) == ["role": ["employee", "admin"], "securityLevel": ["1", "9"]])
            #expect(changes(updates[1]) == ["role": ["admin", "employee"]])
            let deleted = try #require(events("delete_user").first)
            #expect(changes(deleted)["email"] == ["clerk@ledger.test", nil])
            #expect(changes(deleted)["securityLevel"] == ["9", nil])

            #expect(changes(try #require(events("create_room").first))["requiredLevel"] == [nil, "5"])
            #expect(changes(try #require(events("update_room").first)) == ["requiredLevel": ["5", nil]])
            #expect(changes(try #require(events("delete_room").first))["name"] == ["Vault", nil])
            // Other events carry none.
            #expect(events("sign_in").allSatisfy { $0["changes"] == nil })
        }
    }
}
