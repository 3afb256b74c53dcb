import Foundation
import LockProtocol
import Testing
import UnlockITCore

@testable import UnlockITServer

/// A device id the factory derived from the lock's setup code (``FactoryID``) is registered and
/// activated only with that code: whoever has only seen the id on a lock cannot take it.
@Suite struct FactoryIDTests {
    /// A company's signed-in admin and a room, over a broker that makes every account.
    static func withAdmin(_ body: @escaping @Sendable (API, String, String) async throws -> Void) async throws {
        let harness = try Harness()
        let (accounts, _) = AgreeableBroker.make()
        try await harness.run(over: try harness.services(accounts: accounts)) { api in
            let admin = try await api.company("Alpha")
            try await body(api, admin, try await api.createRoom(admin, "Lab"))
        }
    }

    @Test("A factory device id is registered only with the setup code it was made from; any other id needs none")
    func registrationNeedsTheCode() async throws {
        try await Self.withAdmin { api, admin, room in
            let code = SetupCode.random()
            let id = FactoryID.of(code).rawValue
            func register(_ id: String, _ setupCode: String?) async throws -> API.Reply {
                var body: [String: any Sendable] = ["id": id, "name": "Door", "roomId": room]
                if let setupCode { body["setupCode"] = setupCode }
                return try await api.post("/api/v1/locks", admin, body)
            }
            let missing = try await register(id, nil)
            #expect(missing.status == 400 && missing.code == "setup_code_required", "\(missing)")
            #expect(try await register(id, "not a code").code == "invalid_field")
            let other = try await register(id, SetupCode.random().formatted)
            #expect(other.status == 422 && other.code == "setup_code_mismatch", "\(other)")
            #expect(try await api.get("/api/v1/locks/\(id)", admin).code == "lock_not_found")
            // Typed as people type it: lowercase, without hyphens.
            let typed = code.formatted.lowercased().replacingOccurrences(of: "-", with: "")
            let registered = try await register(id, typed)
            #expect(registered.status == 201, "\(registered)")
            #expect(!registered.text.contains(code.formatted) && !registered.text.contains(typed))

            // Any other id: no code needed; one given is checked for its form only.
            #expect(try await register("lock-side-door", nil).status == 201)
            #expect(try await register("lock-back-door", "not a code").code == "invalid_field")
            #expect(try await register("lock-back-door", SetupCode.random().formatted).status == 201)
        }
    }

    @Test("Activating a factory device id with another lock's code is refused before the lock is asked, and audited")
    func activationChecksTheCodeFirst() async throws {
        try await Self.withAdmin { api, admin, room in
            let code = SetupCode.random()
            let id = FactoryID.of(code).rawValue
            #expect(
                try await api.post("/api/v1/locks", admin, ["id": id, "name": "Door", "roomId": room, "setupCode": code.formatted]).status == 201)
            // A stand-in made with a code of its own would answer to that code: the server does not ask.
            let refused = try await api.post("/api/v1/locks/\(id)/activate", admin, ["setupCode": SetupCode.random().formatted])
            #expect(refused.status == 422 && refused.code == "setup_code_mismatch", "\(refused)")
            // With its own code the lock is asked (here the broker cannot be reached).
            let asked = try await api.post("/api/v1/locks/\(id)/activate", admin, ["setupCode": code.formatted])
            #expect(asked.code == "broker_unavailable", "\(asked)")
            let reasons = try await api.get("/api/v1/audit?action=activate_lock", admin).items.compactMap { $0["reason"] as? String }
            #expect(reasons.sorted() == ["broker_unavailable", "setup_code_mismatch"])
        }
    }

    @Test("Whoever lacks its code learns nothing of who holds a factory id, and spends no budget; its own company needs the code again too")
    func theCodeComesBeforeEverything() async throws {
        let harness = try Harness { $0.takenLockIDsPerDay = 1 }
        try await harness.runWithTwoCompanies { api, site, _ throws in
            let (alpha, beta, alphaRoom, betaRoom) = (site.alpha, site.beta, site.alphaRoom, site.betaRoom)
            let code = SetupCode.random()
            let id = FactoryID.of(code).rawValue
            func register(_ admin: String, _ room: String, _ setupCode: SetupCode?) async throws -> API.Reply {
                var body: [String: any Sendable] = ["id": id, "name": "Door", "roomId": room]
                if let setupCode { body["setupCode"] = setupCode.formatted }
                return try await api.post("/api/v1/locks", admin, body)
            }
            #expect(try await register(beta, betaRoom, code).status == 201)
            // Without the code, Alpha is told what anyone would be, however often; the budget of one stays.
            for _ in 1...3 {
                #expect(try await register(alpha, alphaRoom, nil).code == "setup_code_required")
                #expect(try await register(alpha, alphaRoom, SetupCode.random()).code == "setup_code_mismatch")
            }
            #expect(try await register(alpha, alphaRoom, code).code == "lock_id_taken")
            #expect(try await register(alpha, alphaRoom, code).code == "too_many_taken_lock_ids")

            // Beta retires it and registers it again: with the code only.
            #expect(try await api.post("/api/v1/locks/\(id)/retire", beta).status == 200)
            #expect(try await register(beta, betaRoom, nil).code == "setup_code_required")
            #expect(try await register(beta, betaRoom, code).status == 201)
        }
    }
}
