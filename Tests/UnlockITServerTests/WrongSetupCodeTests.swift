import Foundation
import HTTPTypes
import LockProtocol
import Testing
import UnlockITCore

@testable import UnlockITServer

/// A wrong setup code, registering a factory device id or activating a lock, is audited and counts
/// against its company's budget (``ServerConfiguration/wrongSetupCodesPerDay``): the server answers
/// guesses only so often (whoever has a factory id can test guesses offline; its 80 bits are what
/// protect it), the company's log shows every one, and the operator hears of a company out of budget.
@Suite struct WrongSetupCodeTests {
    @Test("Wrong setup codes are audited and rationed per company, at registration and at activation; right and missing ones are not counted")
    func wrongCodesAreRationed() async throws {
        let harness = try Harness { $0.wrongSetupCodesPerDay = 3 }
        try await harness.runWithTwoCompanies { api, site, _ in
            let (alpha, beta, alphaRoom, betaRoom) = (site.alpha, site.beta, site.alphaRoom, site.betaRoom)
            func register(_ admin: String, _ room: String, _ id: String, _ setupCode: String?) async throws -> API.Reply {
                var body: [String: any Sendable] = ["id": id, "name": "Door", "roomId": room]
                if let setupCode { body["setupCode"] = setupCode }
                return try await api.post("/api/v1/locks", admin, body)
            }
            func activate(_ admin: String, _ id: String, _ setupCode: String) async throws -> API.Reply {
                try await api.post("/api/v1/locks/\(id)/activate", admin, ["setupCode": setupCode])
            }
            let (front, back) = (SetupCode.random(), SetupCode.random())
            let (frontID, backID) = (FactoryID.of(front).rawValue, FactoryID.of(back).rawValue)
            let wrong = { SetupCode.random().formatted }

            // Neither a missing code nor one of the wrong form is a wrong code; a right one is not either.
            for _ in 1...4 {
                #expect(try await register(alpha, alphaRoom, frontID, nil).code == "setup_code_required")
                #expect(try await register(alpha, alphaRoom, frontID, "not a code").code == "invalid_field")
            }
            #expect(try await register(alpha, alphaRoom, backID, back.formatted).status == 201)
            // An activation with the right code that fails for another reason (the broker is out of reach) is not one either.
            for _ in 1...4 { #expect(try await activate(alpha, backID, back.formatted).code == "broker_unavailable") }

            // Three wrong codes: two at registration, one at activation (the server's own check).
            let first = try await register(alpha, alphaRoom, frontID, wrong())
            #expect(first.status == 422 && first.code == "setup_code_mismatch", "\(first)")
            let activation = try await activate(alpha, backID, wrong())
            #expect(activation.status == 422 && activation.code == "setup_code_mismatch", "\(activation)")
            #expect(try await register(alpha, alphaRoom, frontID, wrong()).code == "setup_code_mismatch")

            // The budget is spent: no code of Alpha's is checked, right or wrong, at either step.
            for (name, paused) in [
                ("register, right code", try await register(alpha, alphaRoom, frontID, front.formatted)),
                ("register, wrong code", try await register(alpha, alphaRoom, frontID, wrong())),
                ("activate, right code", try await activate(alpha, backID, back.formatted)),
            ] {
                #expect(paused.status == 429 && paused.code == "too_many_wrong_setup_codes", "\(name): \(paused)")
                #expect(Int(paused.headers[.retryAfter] ?? "") == 24 * 3600, "\(name)")
            }
            #expect(try await api.get("/api/v1/locks/\(frontID)", alpha).code == "lock_not_found")
            // An id no code is checked for is registered still; Beta is not paused.
            #expect(try await register(alpha, alphaRoom, "lock-side-door", nil).status == 201)
            #expect(try await register(beta, betaRoom, frontID, wrong()).code == "setup_code_mismatch")

            // Each wrong code is in Alpha's log, the registrations' with the device id and the room.
            let registrations = try await api.get("/api/v1/audit?action=register_lock&outcome=denied", alpha).items
            #expect(registrations.count == 2, "\(registrations)")
            for event in registrations {
                #expect(event["reason"] as? String == "setup_code_mismatch" && event["lockId"] as? String == frontID)
                #expect(event["roomId"] as? String == alphaRoom && event["actorId"] != nil)
            }
            let activations = try await api.get("/api/v1/audit?action=activate_lock&outcome=denied", alpha).items
            #expect(activations.compactMap { $0["reason"] as? String } == ["setup_code_mismatch"], "\(activations)")
            // Beta's try is in Beta's log, not Alpha's.
            #expect(try await api.get("/api/v1/audit?action=register_lock&outcome=denied", beta).items.count == 1)

            // A day later Alpha's codes are checked again.
            harness.clock.advance(CompanyDailyBudget.window)
            let alphaAgain = try await api.session("admin@alpha.test", "a brand new password")  // the old session expired
            #expect(try await register(alphaAgain, alphaRoom, frontID, front.formatted).status == 201)
        }
    }

    @Test("Of many wrong codes at once, only as many as the budget has left are checked and audited; the rest are refused unchecked")
    func aBurstOfGuessesIsCheckedOnlyWithinTheBudget() async throws {
        let harness = try Harness { $0.wrongSetupCodesPerDay = 3 }
        try await harness.runWithTwoCompanies { api, site, _ in
            let id = FactoryID.of(SetupCode.random()).rawValue
            let codes = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 1...12 {
                    group.addTask {
                        try await api.post(
                            "/api/v1/locks", site.alpha,
                            ["id": id, "name": "Door", "roomId": site.alphaRoom, "setupCode": SetupCode.random().formatted]
                        ).code
                    }
                }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(codes.filter { $0 == "setup_code_mismatch" }.count == 3, "\(codes)")
            #expect(codes.filter { $0 == "too_many_wrong_setup_codes" }.count == 9, "\(codes)")
            #expect(try await api.get("/api/v1/audit?action=register_lock&outcome=denied", site.alpha).items.count == 3)
        }
    }

    @Test("A budget's take checks and counts in one step, and what is given back can be taken again")
    func takeAndGiveBack() async throws {
        let budget = CompanyDailyBudget(perDay: 3)
        let (company, now) = (CompanyID.generate(), Date(timeIntervalSince1970: 1_800_000_000))
        func take() -> Date? { try? budget.take(for: company, now: now, refusal: APIError.tooManyWrongSetupCodes) }
        let taken = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<64 { group.addTask { take() != nil } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(taken == 3)
        #expect(budget.wait(for: company, now: now) == .seconds(CompanyDailyBudget.window))
        budget.giveBack(now, for: company)
        #expect(budget.wait(for: company, now: now) == nil)
        #expect(take() == now)
        #expect(take() == nil)
        // Another company's budget is its own.
        #expect((try? budget.take(for: CompanyID.generate(), now: now, refusal: APIError.tooManyWrongSetupCodes)) != nil)
    }
}
