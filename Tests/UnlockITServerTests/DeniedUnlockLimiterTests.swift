import Foundation
import HTTPTypes
import LockProtocol
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

@Suite struct DeniedUnlockLimiterTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    let alice = UserID(unchecked: "00000000-0000-4000-8000-00000000000a")
    let bob = UserID(unchecked: "00000000-0000-4000-8000-00000000000b")

    @Test func theDenialThatReachesTheLimitPausesTheUserUntilTheOldestIsAMinuteOld() {
        let limiter = DeniedUnlockLimiter(perMinute: 3)
        #expect(limiter.denied(alice, now: start) == false)
        #expect(limiter.denied(alice, now: start + 1) == false)
        #expect(limiter.wait(for: alice, now: start + 1) == nil)
        #expect(limiter.denied(alice, now: start + 2) == true)
        #expect(limiter.wait(for: alice, now: start + 2) == .seconds(58))
        #expect(limiter.wait(for: alice, now: start + 30) == .seconds(30))
        #expect(limiter.wait(for: bob, now: start + 30) == nil)
        // The oldest denial is a minute old: one more try. Denied again, the user waits for the next
        // oldest, and that is not reported as reaching the limit a second time within the minute.
        #expect(limiter.wait(for: alice, now: start + 60) == nil)
        #expect(limiter.denied(alice, now: start + 60) == false)
        #expect(limiter.wait(for: alice, now: start + 60) == .seconds(1))
        // A minute after the last report, reaching the limit is reported again.
        #expect(limiter.denied(alice, now: start + 121) == false)
        #expect(limiter.denied(alice, now: start + 122) == false)
        #expect(limiter.denied(alice, now: start + 123) == true)
    }

    @Test func memoryIsBoundedAndQuietUsersGoFirst() {
        let limiter = DeniedUnlockLimiter(perMinute: 3, capacity: 100)
        for index in 0..<100 { _ = limiter.denied(UserID(unchecked: "user-\(index)"), now: start) }
        _ = limiter.denied(alice, now: start + 10)
        #expect(limiter.userCount <= 100)
        // Expired ones are dropped first, and a paused user last.
        _ = limiter.denied(alice, now: start + 59)
        _ = limiter.denied(alice, now: start + 59)
        for index in 0..<200 { _ = limiter.denied(UserID(unchecked: "later-\(index)"), now: start + 61) }
        #expect(limiter.userCount <= 100)
        #expect(limiter.wait(for: alice, now: start + 61) != nil)
    }
}

@Suite struct DeniedUnlocksThroughTheAPI {
    @Test("A user denied too often is paused with 429, once in the log, and others are not")
    func aUserDeniedTooOftenIsPaused() async throws {
        let harness = try Harness()
        try await harness.run { api in
            let admin = try await api.company("Paused")
            _ = try await api.createUser(admin, "mallory@paused.test", level: 0)
            let mallory = try await api.session("mallory@paused.test", "initial password 1")
            // Probing device ids: every miss is a denial of the user's own making.
            for index in 0..<10 {
                let reply = try await api.post("/api/v1/locks/probe-\(index)/unlock", mallory)
                #expect(reply.status == 404, "\(reply)")
            }
            let paused = try await api.post("/api/v1/locks/probe-10/unlock", mallory)
            #expect(paused.status == 429, "\(paused)")
            #expect(paused.code == "too_many_denied_unlocks")
            #expect(paused.headers[.retryAfter] == "60")
            // Someone else is not affected.
            #expect(try await api.post("/api/v1/locks/probe-0/unlock", admin).status == 404)

            let log = try await api.get("/api/v1/audit?action=unlock&limit=100", admin)
            let reasons = log.items.compactMap { $0["reason"] as? String }
            #expect(reasons.filter { $0 == "lock_not_found" }.count == 11)
            #expect(reasons.filter { $0 == "throttled" }.count == 1)

            harness.clock.advance(60)
            #expect(try await api.post("/api/v1/locks/probe-11/unlock", mallory).status == 404)
        }
    }

    /// A company with an admin, an employee (eve) and an active lock anyone of the company may open:
    /// the admin's and eve's sessions, and the lock.
    static func openLock(of company: String, _ harness: Harness, _ api: API) async throws -> (admin: String, eve: String, lock: LockID) {
        let admin = try await api.company(company)
        let domain = "\(company.lowercased()).test"
        let companyID = try #require(try await harness.store.credentials(email: "admin@\(domain)")?.user.companyID)
        _ = try await api.createUser(admin, "eve@\(domain)", level: 1)
        let eve = try await api.session("eve@\(domain)", "initial password 1")
        let roomID = try await api.createRoom(admin, "Open plan", requiredLevel: 0)
        return (admin, eve, try await harness.activeLock("lock-\(company.lowercased())", company: companyID, room: roomID))
    }

    @Test("Unlocks the rule allows never count, whatever the lock or the broker then does")
    func allowedUnlocksDoNotCount() async throws {
        let harness = try Harness()
        try await harness.run { api in
            let (_, eve, lockID) = try await Self.openLock(of: "Allowed", harness, api)
            // The harness's broker is unreachable: the rule allows, and the unlock ends in 503.
            for _ in 0..<15 {
                let reply = try await api.post("/api/v1/locks/\(lockID)/unlock", eve)
                #expect(reply.status == 503 && reply.code == "broker_unavailable", "\(reply)")
            }
        }
    }

    @Test("A user over their rate of unlock attempts of any outcome is paused with 429, once in the log, and others are not")
    func aUserOverTheirRateIsPaused() async throws {
        let harness = try Harness { $0.unlocksPerUserPerMinute = 5 }  // one attempt every 12 s
        try await harness.run { api in
            let (admin, eve, lockID) = try await Self.openLock(of: "Rate", harness, api)
            // Allowed by the rule every time (the broker is unreachable): these count too.
            for _ in 0..<5 {
                let reply = try await api.post("/api/v1/locks/\(lockID)/unlock", eve)
                #expect(reply.status == 503 && reply.code == "broker_unavailable", "\(reply)")
            }
            for _ in 0..<3 {
                let paused = try await api.post("/api/v1/locks/\(lockID)/unlock", eve)
                #expect(paused.status == 429 && paused.code == "too_many_unlocks", "\(paused)")
                let retryAfter = try #require(paused.headers[.retryAfter].flatMap { Int($0) })
                #expect((1...12).contains(retryAfter), "\(retryAfter)")
            }
            // Someone else is not affected.
            #expect(try await api.post("/api/v1/locks/\(lockID)/unlock", admin).code == "broker_unavailable")

            let log = try await api.get("/api/v1/audit?action=unlock&limit=100", admin)
            let reasons = log.items.compactMap { $0["reason"] as? String }
            #expect(reasons.filter { $0 == "broker_unavailable" }.count == 6)
            // A reason of its own: not the pause for denials' `throttled`.
            #expect(reasons.filter { $0 == "rate_limited" }.count == 1)
            #expect(!reasons.contains("throttled"))
        }
    }
}
