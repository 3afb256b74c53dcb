import Foundation
import HTTPTypes
import Logging
import Testing
import UnlockITCore

@testable import UnlockITServer

/// `email_taken` about another company's addresses, and `lock_id_taken` about its device ids, are
/// rationed per company: an import must not be a way to learn, 10,000 at a time, which addresses
/// other companies' people use, nor registering locks a way to learn which devices they bought.
@Suite struct TakenNameTests {
    @Test func theLimiterCountsADayAndAnOverrunUsesItAllUp() {
        let limiter = CompanyDailyBudget(perDay: 3)
        let company = CompanyID.generate()
        let other = CompanyID.generate()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(limiter.count(0, for: company, now: start))
        #expect(limiter.count(2, for: company, now: start))
        #expect(limiter.wait(for: company, now: start) == nil)
        #expect(limiter.count(1, for: company, now: start.addingTimeInterval(3600)))
        // Full: paused until the oldest counted answer is a day old; the other company is not.
        #expect(limiter.wait(for: company, now: start.addingTimeInterval(3600)) == .seconds(23 * 3600))
        #expect(limiter.wait(for: other, now: start) == nil)
        #expect(limiter.wait(for: company, now: start.addingTimeInterval(CompanyDailyBudget.window)) == nil)
        // A day later two have expired; asking about five at once overruns what is left and uses it up,
        // so the company waits for the oldest remaining one to be a day old.
        let later = start.addingTimeInterval(CompanyDailyBudget.window)
        #expect(!limiter.count(5, for: company, now: later))
        #expect(limiter.wait(for: company, now: later) == .seconds(3600))
        #expect(!limiter.count(1, for: company, now: later.addingTimeInterval(1800)))
        // Counting none says whether the budget is open: a request that found no name in use is
        // refused too once it is spent.
        #expect(!limiter.count(0, for: company, now: later.addingTimeInterval(1800)))
        #expect(limiter.count(0, for: other, now: later))
    }

    @Test("The request that spends a company's budget logs a warning, fitting or not; those turned away after it do not")
    func theRequestThatSpendsTheBudgetIsLogged() throws {
        let lines = LazyMetadataLogHandlerTests.Capture()
        let logger = Logger(label: "test") { StreamLogHandler(label: $0, stream: lines, metadataProvider: nil) }
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let admin = User(
            id: UserID.generate(), companyID: CompanyID.generate(), email: "admin@alpha.test", name: "Admin", role: .admin, securityLevel: 0,
            enabled: true, mustChangePassword: false, createdAt: start, updatedAt: start)
        let refusal = { (wait: Duration) in APIError.tooManyTakenLockIDs(retryAfter: wait) }
        // As the controllers do: once the names are looked up, whatever was found.
        func count(_ limiter: CompanyDailyBudget, _ foreign: Int, at now: Date) throws {
            try limiter.count(foreign, by: admin, now: now, logger: logger, warning: "paused", refusal: refusal)
        }
        let limiter = CompanyDailyBudget(perDay: 2)
        try count(limiter, 0, at: start)
        try count(limiter, 1, at: start)
        #expect(lines.written.isEmpty)
        // The second fits and spends it: the pause begins, and is said.
        try count(limiter, 1, at: start)
        #expect(lines.written.count == 1)
        #expect(lines.written.first?.contains("paused") == true && lines.written.first?.contains("company=\(admin.companyID)") == true)
        #expect(throws: APIError.self) { try count(limiter, 1, at: start) }
        #expect(throws: APIError.self) { try count(limiter, 0, at: start) }
        #expect(lines.written.count == 1)
        // An overrun spends it too, and is refused.
        let other = CompanyDailyBudget(perDay: 2)
        #expect(throws: APIError.self) { try count(other, 3, at: start) }
        #expect(lines.written.count == 2)
    }

    @Test("Other companies' addresses count against the asking company's budget; its own never do")
    func rationedPerCompany() async throws {
        let harness = try Harness { $0.takenEmailsPerDay = 3 }
        try await harness.run { api in
            let alpha = try await api.company("Alpha")
            let beta = try await api.company("Beta")
            for index in 1...5 { _ = try await api.createUser(beta, "b\(index)@beta.test") }
            let own = try await api.createUser(alpha, "a1@alpha.test")

            func create(_ admin: String, _ email: String) async throws -> API.Reply {
                try await api.post("/api/v1/users", admin, ["email": email, "name": "Someone", "role": "employee", "securityLevel": 1])
            }
            func importRows(_ admin: String, _ emails: [String]) async throws -> API.Reply {
                let rows: [[String: any Sendable]] = emails.map { ["email": $0, "name": "Someone", "role": "employee", "securityLevel": 1] }
                return try await api.post("/api/v1/users/import?dryRun=true", admin, ["users": rows])
            }

            // Alpha's own addresses: email_taken as often as asked, never counted.
            for _ in 1...5 { #expect(try await create(alpha, "a1@alpha.test").code == "email_taken") }
            // Beta's: two in an import, one in a rename, and the budget of three is spent.
            let imported = try await importRows(alpha, ["b1@beta.test", "new1@alpha.test", "b2@beta.test", "b1@beta.test"])
            #expect(imported.status == 422)
            let errors = try #require(imported.json["errors"] as? [[String: any Sendable]])
            #expect(errors.map { "\($0["index"]!) \($0["reason"]!)" } == ["0 email_taken", "2 email_taken", "3 duplicate_in_file(0)"])
            let renamed = try await api.call(.patch, "/api/v1/users/\(own)", token: alpha, json: ["email": "b3@beta.test"])
            #expect(renamed.code == "email_taken")

            // Now every request of Alpha's that checks an address is paused, whatever the address; Beta is not.
            let paused = try await create(alpha, "new2@alpha.test")
            #expect(paused.status == 429 && paused.code == "too_many_taken_emails", "\(paused)")
            #expect(Int(paused.headers[.retryAfter] ?? "") == 24 * 3600)
            #expect(try await importRows(alpha, ["new3@alpha.test"]).code == "too_many_taken_emails")
            #expect(try await api.call(.patch, "/api/v1/users/\(own)", token: alpha, json: ["email": "x@alpha.test"]).code == "too_many_taken_emails")
            // Changes that check no address go on; the paused request created no one.
            #expect(try await api.call(.patch, "/api/v1/users/\(own)", token: alpha, json: ["securityLevel": 2]).status == 200)
            #expect(!(try await api.get("/api/v1/users", alpha).text.contains("new2@alpha.test")))
            #expect(try await create(beta, "b6@beta.test").status == 201)
            #expect(try await create(beta, "a1@alpha.test").code == "email_taken")

            // A day later Alpha may go on; an import that finds more than is left learns only that.
            harness.clock.advance(CompanyDailyBudget.window)
            let alphaAgain = try await api.session("admin@alpha.test", "a brand new password")  // the old session expired
            #expect(try await create(alphaAgain, "new2@alpha.test").status == 201)
            let overrun = try await importRows(alphaAgain, ["b1@beta.test", "b2@beta.test", "b3@beta.test", "b4@beta.test"])
            #expect(overrun.status == 429 && overrun.code == "too_many_taken_emails", "\(overrun)")
            #expect(!overrun.text.contains("b1@beta.test") && overrun.json["errors"] == nil)
            #expect(try await create(alphaAgain, "new4@alpha.test").code == "too_many_taken_emails")
        }
    }

    @Test("Other companies' lock ids count against the asking company's budget; its own never do")
    func lockIDsRationedPerCompany() async throws {
        let harness = try Harness { $0.takenLockIDsPerDay = 2 }
        try await harness.runWithTwoCompanies { api, site, _ in
            let (alpha, beta, alphaRoom, betaRoom) = (site.alpha, site.beta, site.alphaRoom, site.betaRoom)
            func register(_ admin: String, _ id: String, _ room: String) async throws -> API.Reply {
                try await api.post("/api/v1/locks", admin, ["id": id, "name": "Door", "roomId": room])
            }
            for index in 1...3 { #expect(try await register(beta, "lock-beta-\(index)", betaRoom).status == 201) }
            #expect(try await register(alpha, "lock-alpha", alphaRoom).status == 201)

            // Alpha's own id: lock_id_taken as often as asked, never counted.
            for _ in 1...4 { #expect(try await register(alpha, "lock-alpha", alphaRoom).code == "lock_id_taken") }
            // Beta's: two, and the budget is spent.
            #expect(try await register(alpha, "lock-beta-1", alphaRoom).code == "lock_id_taken")
            #expect(try await register(alpha, "lock-beta-2", alphaRoom).code == "lock_id_taken")

            // Now every registration of Alpha's is paused, whatever the id: a free one, its own, Beta's.
            for id in ["lock-alpha-2", "lock-alpha", "lock-beta-3"] {
                let paused = try await register(alpha, id, alphaRoom)
                #expect(paused.status == 429 && paused.code == "too_many_taken_lock_ids", "\(id): \(paused)")
                #expect(Int(paused.headers[.retryAfter] ?? "") == 24 * 3600)
            }
            #expect(try await api.get("/api/v1/locks/lock-alpha-2", alpha).code == "lock_not_found")
            // Alpha's other changes of its locks go on; Beta is not paused.
            #expect(try await api.call(.patch, "/api/v1/locks/lock-alpha", token: alpha, json: ["name": "Front"]).status == 200)
            #expect(try await register(beta, "lock-beta-4", betaRoom).status == 201)
            #expect(try await register(beta, "lock-alpha", betaRoom).code == "lock_id_taken")

            // A day later Alpha may register again.
            harness.clock.advance(CompanyDailyBudget.window)
            let alphaAgain = try await api.session("admin@alpha.test", "a brand new password")  // the old session expired
            #expect(try await register(alphaAgain, "lock-alpha-2", alphaRoom).status == 201)
        }
    }
}
