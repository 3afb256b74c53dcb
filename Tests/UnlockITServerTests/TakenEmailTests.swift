import Foundation
import HTTPTypes
import Testing
import UnlockITCore

@testable import UnlockITServer

/// `email_taken` about another company's addresses is rationed per company: an import must not be a
/// way to learn, 10,000 at a time, which addresses other companies' people use.
@Suite struct TakenEmailTests {
    @Test func theLimiterCountsADayAndAnOverrunUsesItAllUp() {
        let limiter = TakenEmailLimiter(perDay: 3)
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
        #expect(limiter.wait(for: company, now: start.addingTimeInterval(TakenEmailLimiter.window)) == nil)
        // A day later two have expired; asking about five at once overruns what is left and uses it up,
        // so the company waits for the oldest remaining one to be a day old.
        let later = start.addingTimeInterval(TakenEmailLimiter.window)
        #expect(!limiter.count(5, for: company, now: later))
        #expect(limiter.wait(for: company, now: later) == .seconds(3600))
        #expect(!limiter.count(1, for: company, now: later.addingTimeInterval(1800)))
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
            harness.clock.advance(TakenEmailLimiter.window)
            let alphaAgain = try await api.session("admin@alpha.test", "a brand new password")  // the old session expired
            #expect(try await create(alphaAgain, "new2@alpha.test").status == 201)
            let overrun = try await importRows(alphaAgain, ["b1@beta.test", "b2@beta.test", "b3@beta.test", "b4@beta.test"])
            #expect(overrun.status == 429 && overrun.code == "too_many_taken_emails", "\(overrun)")
            #expect(!overrun.text.contains("b1@beta.test") && overrun.json["errors"] == nil)
            #expect(try await create(alphaAgain, "new4@alpha.test").code == "too_many_taken_emails")
        }
    }
}
