import Foundation
import Testing

@testable import UnlockITServer

@Suite struct SignInLimiterTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func started(_ verdict: SignInLimiter.Verdict) -> SignInLimiter.Attempt? {
        if case .check(let attempt) = verdict { return attempt }
        return nil
    }

    func isBusy(_ verdict: SignInLimiter.Verdict) -> Bool {
        if case .busy = verdict { return true }
        return false
    }

    func isRefused(_ verdict: SignInLimiter.Verdict) -> Bool {
        if case .refused = verdict { return true }
        return false
    }

    @Test("Checks running at the same time cannot together get past the lock-out threshold")
    func concurrentChecksAreBounded() {
        let limiter = SignInLimiter(perHour: 100, lockoutThreshold: 5, lockoutSeconds: 60)
        // Nine checks asked for before any ends (bcrypt's slot and queue hold nine): five may run.
        let verdicts = (0..<9).map { _ in limiter.begin("a@x.test", now: now) }
        let running = verdicts.compactMap(started)
        #expect(running.count == 5)
        #expect(verdicts.filter(isBusy).count == 4)
        #expect(started(limiter.begin("b@x.test", now: now)) != nil)  // other accounts are not affected
        // All five were wrong: the account is locked out, and that is a refusal, not "busy".
        for attempt in running { limiter.finished(attempt, passed: false, now: now) }
        #expect(isRefused(limiter.begin("a@x.test", now: now.addingTimeInterval(59))))
        #expect(started(limiter.begin("a@x.test", now: now.addingTimeInterval(61))) != nil)
    }

    @Test("A passing check ends the run of failures; an abandoned one counts for nothing")
    func verdicts() throws {
        let limiter = SignInLimiter(perHour: 100, lockoutThreshold: 3, lockoutSeconds: 60)
        for _ in 0..<2 { limiter.finished(try #require(started(limiter.begin("a@x.test", now: now))), passed: false, now: now) }
        limiter.finished(try #require(started(limiter.begin("a@x.test", now: now))), passed: true, now: now)
        for _ in 0..<2 { limiter.finished(try #require(started(limiter.begin("a@x.test", now: now))), passed: false, now: now) }
        // Two failures in a row so far; a check the hasher turned away changes nothing.
        limiter.abandoned(try #require(started(limiter.begin("a@x.test", now: now))))
        #expect(started(limiter.begin("a@x.test", now: now)) != nil)
        #expect(isBusy(limiter.begin("a@x.test", now: now)))  // one failure left, and one check is running
    }

    @Test("Failures from elsewhere do not lock the user out at a client they signed in from; its own failures do")
    func aKnownClientIsCountedApart() throws {
        let limiter = SignInLimiter(perHour: 100, lockoutThreshold: 3, lockoutSeconds: 60)
        func fail(from client: String) throws {
            limiter.finished(try #require(started(limiter.begin("a@x.test", client: client, now: now))), passed: false, now: now)
        }
        limiter.finished(try #require(started(limiter.begin("a@x.test", client: "home", now: now))), passed: true, now: now)
        // Someone who knows the email fails on purpose from elsewhere: the account is locked out for
        // every client that never had the password, not for the user's own.
        for _ in 0..<3 { try fail(from: "mallory") }
        #expect(isRefused(limiter.begin("a@x.test", client: "mallory", now: now)))
        #expect(isRefused(limiter.begin("a@x.test", client: "somewhere-new", now: now)))
        #expect(isRefused(limiter.begin("a@x.test", now: now)))
        let home = try #require(started(limiter.begin("a@x.test", client: "home", now: now)))
        limiter.finished(home, passed: true, now: now)
        // The known client's own failures lock it out by themselves, as an account's would.
        for _ in 0..<3 { try fail(from: "home") }
        #expect(isRefused(limiter.begin("a@x.test", client: "home", now: now.addingTimeInterval(59))))
        #expect(started(limiter.begin("a@x.test", client: "home", now: now.addingTimeInterval(61))).map(limiter.abandoned) != nil)
        // Known for a while only: a month later the client counts with the account again.
        let later = now.addingTimeInterval(SignInLimiter.knownClientLifetime + 1)
        for _ in 0..<3 {
            limiter.finished(try #require(started(limiter.begin("a@x.test", client: "mallory", now: later))), passed: false, now: later)
        }
        #expect(isRefused(limiter.begin("a@x.test", client: "home", now: later)))
    }

    @Test("An account remembers a bounded number of clients, the most recent")
    func knownClientsAreBounded() throws {
        let limiter = SignInLimiter(perHour: 100, lockoutThreshold: 1, lockoutSeconds: 60)
        for index in 0...SignInLimiter.knownClientsPerAccount {
            let at = now.addingTimeInterval(Double(index))
            limiter.finished(try #require(started(limiter.begin("a@x.test", client: "c\(index)", now: at))), passed: true, now: at)
        }
        limiter.finished(try #require(started(limiter.begin("a@x.test", client: "mallory", now: now))), passed: false, now: now)
        #expect(isRefused(limiter.begin("a@x.test", client: "c0", now: now)))  // the oldest was forgotten
        #expect(started(limiter.begin("a@x.test", client: "c1", now: now)) != nil)
    }

    @Test("The accounts with known clients stay within the capacity, those no longer known forgotten first")
    func accountsWithKnownClientsAreBounded() throws {
        let limiter = SignInLimiter(perHour: 100, lockoutThreshold: 1, lockoutSeconds: 60, capacity: 10)
        func signIn(_ email: String, at time: Date) throws {
            limiter.finished(try #require(started(limiter.begin(email, client: "home", now: time))), passed: true, now: time)
        }
        for index in 0..<5 { try signIn("old-\(index)@x.test", at: now) }
        try signIn("a@x.test", at: now.addingTimeInterval(SignInLimiter.knownClientLifetime - 60))
        let past = now.addingTimeInterval(SignInLimiter.knownClientLifetime + 1)
        for index in 0..<5 { try signIn("new-\(index)@x.test", at: past) }
        // The tenth made room by forgetting the five whose client is no longer known, and only them.
        #expect(limiter.accountsWithKnownClients == 6)
        // "a" still knows its client: failing from elsewhere does not shut it out.
        limiter.finished(try #require(started(limiter.begin("a@x.test", client: "mallory", now: past))), passed: false, now: past)
        #expect(started(limiter.begin("a@x.test", client: "home", now: past)) != nil)
        for index in 5..<50 { try signIn("new-\(index)@x.test", at: past.addingTimeInterval(Double(index))) }
        #expect((9...10).contains(limiter.accountsWithKnownClients), "\(limiter.accountsWithKnownClients)")
    }

    @Test("At most perHour failures in any hour")
    func hourlyLimit() throws {
        let limiter = SignInLimiter(perHour: 3, lockoutThreshold: 100, lockoutSeconds: 60)
        for _ in 0..<3 { limiter.finished(try #require(started(limiter.begin("a@x.test", now: now))), passed: false, now: now) }
        #expect(isRefused(limiter.begin("a@x.test", now: now.addingTimeInterval(3599))))
        #expect(started(limiter.begin("a@x.test", now: now.addingTimeInterval(3600))) != nil)
    }

    @Test("A spray of new emails stays within the capacity and does not free a locked-out account")
    func capacity() throws {
        let limiter = SignInLimiter(perHour: 100, lockoutThreshold: 3, lockoutSeconds: 60, capacity: 10)
        for _ in 0..<3 { limiter.finished(try #require(started(limiter.begin("victim@x.test", now: now))), passed: false, now: now) }
        for index in 0..<50 {
            let at = now.addingTimeInterval(Double(index) / 10)
            limiter.finished(try #require(started(limiter.begin("spray-\(index)@x.test", now: at))), passed: false, now: at)
        }
        #expect((9...10).contains(limiter.accountCount), "\(limiter.accountCount)")
        #expect(isRefused(limiter.begin("victim@x.test", now: now.addingTimeInterval(10))))
    }
}
