import Crypto
import Foundation
import GRDB
import HTTPTypes
import HummingbirdTesting
import SiteHarness
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

@Suite(.timeLimit(.minutes(10)))
struct SignInTests {
    @Test("First sign-in: every call but the password change answers password_change_required")
    func firstLoginFlow() async throws {
        let harness = try Harness()
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let signIn = try await api.signIn("admin@acme.test", initial)
            #expect(signIn.status == 200)
            #expect(signIn.json["lifetime"] as? Int == 8 * 3600)
            #expect(signIn.json["mustChangePassword"] as? Bool == true)
            let token = try #require(signIn.string("token"))
            #expect(token.utf8.count >= 43)

            for path in ["/api/v1/me", "/api/v1/users", "/api/v1/me/access", "/api/v1/rooms"] {
                let reply = try await api.get(path, token)
                #expect(reply.status == 403, "\(path)")
                #expect(reply.code == "password_change_required", "\(path)")
            }
            let weak = try await api.post("/api/v1/me/password", token, ["currentPassword": initial, "newPassword": "short"])
            #expect(weak.code == "weak_password")
            // Long enough, but the account's own email with a year, or a keyboard row: guessed first.
            for guessable in ["Admin@Acme.test 2026", "qwertyuiopasdf"] {
                let refused = try await api.post("/api/v1/me/password", token, ["currentPassword": initial, "newPassword": guessable])
                #expect(refused.status == 400 && refused.code == "weak_password", "\(guessable): \(refused)")
            }
            let wrong = try await api.post("/api/v1/me/password", token, ["currentPassword": "not it at all", "newPassword": "a good long password"])
            #expect(wrong.status == 403)
            #expect(wrong.code == "wrong_password")
            let same = try await api.post("/api/v1/me/password", token, ["currentPassword": initial, "newPassword": initial])
            #expect(same.code == "password_unchanged")
            // The same password in other characters that hash alike (fullwidth forms fold to ASCII) is the same password.
            let fullwidth = String(
                String.UnicodeScalarView(
                    initial.unicodeScalars.map { (0x21...0x7E).contains($0.value) ? Unicode.Scalar($0.value + 0xFEE0)! : $0 }))
            #expect(fullwidth != initial)
            let folded = try await api.post("/api/v1/me/password", token, ["currentPassword": initial, "newPassword": fullwidth])
            #expect(folded.code == "password_unchanged", "\(folded)")
            // A new password that could never be set is refused before the current one is checked:
            // it costs no bcrypt pass and no attempt, so ten of them lock nothing out (five would).
            for _ in 0..<10 {
                let refused = try await api.post("/api/v1/me/password", token, ["currentPassword": "not it at all", "newPassword": "short"])
                #expect(refused.status == 400 && refused.code == "weak_password", "\(refused)")
            }

            let changed = try await api.post("/api/v1/me/password", token, ["currentPassword": initial, "newPassword": "a good long password"])
            #expect(changed.status == 204)
            let me = try await api.get("/api/v1/me", token)
            #expect(me.status == 200)
            #expect((me.json["user"] as? [String: any Sendable])?["mustChangePassword"] as? Bool == false)
            // The old password no longer works; the new one does.
            #expect(try await api.signIn("admin@acme.test", initial).status == 401)
            #expect(try await api.signIn("ADMIN@acme.test", "a good long password").status == 200)

            // Two changes at once from one session: one wins; the other's "current" password is not
            // current any more (403 wrong_password), and the session stays signed in.
            async let first = api.post(
                "/api/v1/me/password", token, ["currentPassword": "a good long password", "newPassword": "first new password"])
            async let second = api.post(
                "/api/v1/me/password", token, ["currentPassword": "a good long password", "newPassword": "second new password"])
            let answers = try await [first, second]
            #expect(answers.map(\.status).sorted() == [204, 403], "\(answers)")
            #expect(answers.first { $0.status == 403 }?.code == "wrong_password")
            #expect(try await api.get("/api/v1/me", token).status == 200)
        }
    }

    @Test("A raised bcrypt cost reaches an account when it next signs in, and ends none of its sessions")
    func aRaisedCostRehashesAtSignIn() async throws {
        var harness = try Harness()
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        let before = try #require(try await harness.store.credentials(email: "admin@acme.test")?.passwordHash)
        let cost = Harness.bcryptCost
        #expect(PasswordHasher.cost(of: before) == cost)
        harness.configuration.bcryptCost = cost + 1
        let store = harness.store
        try await harness.run { api in
            #expect(try await api.signIn("admin@acme.test", "not the password at all").status == 401)
            #expect(try await store.credentials(email: "admin@acme.test")?.passwordHash == before)
            let first = try await api.signIn("admin@acme.test", initial)
            #expect(first.status == 200)
            let token = try #require(first.string("token"))
            let after = try #require(try await store.credentials(email: "admin@acme.test")?.passwordHash)
            #expect(PasswordHasher.cost(of: after) == cost + 1)
            // The same password signs in again, and the session it opened is still there.
            #expect(try await api.signIn("admin@acme.test", initial).status == 200)
            #expect(try await api.get("/api/v1/me", token).code == "password_change_required")
        }
        // Sign-ins at once of an account whose hash one of them makes again: all of them succeed.
        harness.configuration.bcryptCost = cost + 2
        try await harness.run { api in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 { group.addTask { try await api.signIn("admin@acme.test", initial).status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == [200, 200, 200, 200], "\(statuses)")
            #expect(PasswordHasher.cost(of: try #require(try await store.credentials(email: "admin@acme.test")?.passwordHash)) == cost + 2)
        }
    }

    @Test("A password change racing a sign-in that hashes the password again at a new cost still succeeds")
    func aChangeRacingARehash() async throws {
        var harness = try Harness()
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        let token = LockedBox("")
        try await harness.run { api in token.set(try await api.session("admin@acme.test", initial)) }
        harness.configuration.bcryptCost = Harness.bcryptCost + 1
        try await harness.run { api in
            async let signIn = api.signIn("admin@acme.test", "a brand new password")
            async let change = api.post(
                "/api/v1/me/password", token.get(), ["currentPassword": "a brand new password", "newPassword": "yet another password"])
            let (signedIn, changed) = try await (signIn, change)
            // The change wins whatever the order; the sign-in may come too late for the old password.
            #expect(changed.status == 204, "\(changed)")
            #expect([200, 401].contains(signedIn.status), "\(signedIn)")
            #expect(try await api.signIn("admin@acme.test", "yet another password").status == 200)
        }
    }

    @Test("Wrong password and unknown account answer identically")
    func failuresLookAlike() async throws {
        let harness = try Harness()
        _ = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let wrong = try await api.signIn("admin@acme.test", "wrong password!!")
            let unknown = try await api.signIn("nobody@acme.test", "wrong password!!")
            let malformed = try await api.signIn("not an email", "wrong password!!")
            #expect(wrong.status == 401)
            #expect(wrong.body == unknown.body)
            #expect(wrong.body == malformed.body)
            #expect(wrong.code == "invalid_credentials")
            #expect(wrong.contentType == "application/problem+json")
        }
    }

    @Test("A sign-in or sign-out whose audit event cannot be written changes nothing: no session, no revocation")
    func signInAndOutCommitWithTheirEvents() async throws {
        let harness = try Harness()
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let token = try await api.session("admin@acme.test", initial, newPassword: "the password one")
            // The database refuses one action's audit events, as a failing disk would.
            let database = try DatabaseQueue(path: harness.configuration.databasePath)
            func refuse(_ action: String?) throws {
                try database.write { db in
                    try db.execute(sql: "DROP TRIGGER IF EXISTS refuseAudit")
                    guard let action else { return }
                    try db.execute(
                        sql: """
                            CREATE TRIGGER refuseAudit BEFORE INSERT ON auditEvent WHEN NEW.action = '\(action)'
                            BEGIN SELECT RAISE(ABORT, 'injected by the test'); END
                            """)
                }
            }
            func sessions() throws -> Int { try database.read { db in try Int.fetchOne(db, sql: #"SELECT count(*) FROM "session""#) ?? 0 } }

            let before = try sessions()
            try refuse("sign_in")
            let refused = try await api.signIn("admin@acme.test", "the password one")
            #expect(refused.status == 500, "\(refused)")
            #expect(refused.string("token") == nil)
            #expect(try sessions() == before)

            try refuse("sign_out")
            #expect(try await api.post("/api/v1/auth/sign-out", token).status == 500)
            #expect(try await api.get("/api/v1/me", token).status == 200)

            try refuse(nil)
            #expect(try await api.post("/api/v1/auth/sign-out", token).status == 204)
            #expect(try await api.get("/api/v1/me", token).status == 401)
            let other = try await api.session("admin@acme.test", "the password one")
            let events = try await api.get("/api/v1/audit?action=sign_out", other)
            #expect(events.items.count == 1)
        }
    }

    @Test("Sessions expire, logout revokes, a password change revokes the other sessions")
    func sessionLifecycle() async throws {
        let harness = try Harness { $0.tokenLifetime = 600 }
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let first = try await api.session("admin@acme.test", initial, newPassword: "the password one")
            let second = try await api.session("admin@acme.test", "the password one")
            let third = try await api.session("admin@acme.test", "the password one")
            #expect(try await api.get("/api/v1/me", second).status == 200)

            // Logout revokes only that session.
            #expect(try await api.post("/api/v1/auth/sign-out", second).status == 204)
            #expect(try await api.get("/api/v1/me", second).status == 401)
            #expect(try await api.get("/api/v1/me", third).status == 200)

            // A password change keeps the session that made it and ends the others.
            let change = try await api.post("/api/v1/me/password", third, ["currentPassword": "the password one", "newPassword": "the password two"])
            #expect(change.status == 204)
            #expect(try await api.get("/api/v1/me", first).status == 401)
            #expect(try await api.get("/api/v1/me", third).status == 200)

            // Expiry, by the clock the server is given.
            harness.clock.advance(599)
            #expect(try await api.get("/api/v1/me", third).status == 200)
            harness.clock.advance(2)
            let expired = try await api.get("/api/v1/me", third)
            #expect(expired.status == 401)
            #expect(expired.code == "unauthenticated")

            #expect(try await api.get("/api/v1/me", "uit_" + String(repeating: "A", count: 43)).status == 401)
            #expect(try await api.get("/api/v1/me", "garbage").status == 401)
            #expect(try await api.get("/api/v1/me").status == 401)
        }
    }

    @Test("No answer may be cached, sniffed or framed: not a sign-in's token, not a problem")
    func answersAreNotCached() async throws {
        let harness = try Harness()
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let signIn = try await api.signIn("admin@acme.test", initial)
            #expect(signIn.status == 200 && signIn.string("token") != nil)
            #expect(signIn.headers[.cacheControl] == "no-store")
            let token = try await api.session("admin@acme.test", initial)
            let created = try await api.post(
                "/api/v1/users", token, ["email": "new@acme.test", "name": "New", "role": "employee", "securityLevel": 1])
            #expect(created.status == 201 && created.json["initialPassword"] is String)
            #expect(created.headers[.cacheControl] == "no-store")
            let missing = try await api.get("/api/v1/users/\(UUID().uuidString.lowercased())", token)
            #expect(missing.status == 404)
            #expect(missing.headers[.cacheControl] == "no-store")
            let nowhere = try await api.get("/api/v1/nowhere", token)
            #expect(nowhere.headers[.cacheControl] == "no-store")
            // Nor read as anything but what it says it is, nor framed.
            for reply in [signIn, created, missing, nowhere] {
                #expect(reply.headers[.xContentTypeOptions] == "nosniff", "\(reply)")
                #expect(reply.headers[.contentSecurityPolicy] == "default-src 'none'; frame-ancestors 'none'", "\(reply)")
            }
        }
    }

    @Test("Tokens are stored only as their SHA-256")
    func tokensAreNotStoredInClear() async throws {
        let harness = try Harness()
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let token = try await api.session("admin@acme.test", initial)
            _ = try await api.get("/api/v1/me", token)
            let files = ["unlockit.sqlite", "unlockit.sqlite-wal"].compactMap {
                FileManager.default.contents(atPath: "\(harness.directory.path)/\($0)")
            }
            #expect(!files.isEmpty)
            for data in files {
                #expect(data.range(of: Data(token.utf8)) == nil)
                #expect(data.range(of: Data(token.dropFirst(4).prefix(20).utf8)) == nil)
                #expect(data.range(of: Data("a brand new password".utf8)) == nil)
            }
            let hash = Array(SHA256.hash(data: Array(token.utf8)))
            let stored = try await harness.store.session(tokenHash: hash)
            #expect(stored != nil)
        }
    }

    @Test("Repeated failures lock the account briefly, answered exactly like a wrong password")
    func lockout() async throws {
        let harness = try Harness {
            $0.lockoutThreshold = 5; $0.lockoutSeconds = 60
        }
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let wrongAnswer = try await api.signIn("admin@acme.test", "not the password")
            for _ in 0..<4 { _ = try await api.signIn("admin@acme.test", "not the password") }
            let locked = try await api.signIn("admin@acme.test", initial)
            #expect(locked.status == 401)
            #expect(locked.body == wrongAnswer.body)
            harness.clock.advance(61)
            #expect(try await api.signIn("admin@acme.test", initial).status == 200)
            // The failures and the throttled attempt are in the audit log.
            let admin = try await api.session("admin@acme.test", initial)
            let audit = try await api.get("/api/v1/audit?action=sign_in&outcome=denied", admin)
            #expect(audit.items.filter { ($0["reason"] as? String) == "wrong_password" }.count == 5)
            #expect(audit.items.contains { ($0["reason"] as? String) == "throttled" })
        }
    }

    @Test("A disabled account's right password is answered and counted as a wrong one; the company's log says which it was")
    func aDisabledAccountsPasswordIsNotConfirmed() async throws {
        let harness = try Harness {
            $0.lockoutThreshold = 5; $0.lockoutSeconds = 60
        }
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let admin = try await api.session("admin@acme.test", initial)
            let password = "the leaver's own password"
            let created = try await api.post(
                "/api/v1/users", admin,
                ["email": "leaver@acme.test", "name": "Leaver", "role": "employee", "securityLevel": 1, "password": password])
            let leaver = try #require((created.json["user"] as? [String: any Sendable])?["id"] as? String, "\(created)")
            func enable(_ enabled: Bool) async throws {
                #expect(try await api.call(.patch, "/api/v1/users/\(leaver)", token: admin, json: ["enabled": enabled]).status == 200)
            }
            try await enable(false)
            let wrong = try await api.signIn("leaver@acme.test", "not the password")
            let right = try await api.signIn("leaver@acme.test", password)
            #expect(right.status == 401 && right.body == wrong.body, "\(right)")
            // Counted as failures: with three more, the account is locked out, and enabled again it
            // waits out the lock-out like any other.
            for _ in 0..<3 { _ = try await api.signIn("leaver@acme.test", password) }
            try await enable(true)
            #expect(try await api.signIn("leaver@acme.test", password).status == 401)
            harness.clock.advance(61)
            #expect(try await api.signIn("leaver@acme.test", password).status == 200)
            // Disabled while bcrypt checked the right password: no session, and the same answer.
            let raced = try await harness.whileUncommitted("UPDATE user SET enabled = 0 WHERE id = ?", [leaver]) {
                try await api.signIn("leaver@acme.test", password)
            }
            #expect(raced.status == 401 && raced.body == wrong.body, "\(raced)")
            let audit = try await api.get("/api/v1/audit?action=sign_in&outcome=denied", admin)
            let reasons = audit.items.filter { ($0["subjectId"] as? String) == leaver }.compactMap { $0["reason"] as? String }
            #expect(reasons.sorted() == ["throttled"] + Array(repeating: "user_disabled", count: 5) + ["wrong_password"], "\(reasons)")
        }
    }

    @Test("One client's sign-in attempts are limited per minute, password and OpenID Connect alike: 429 with Retry-After")
    func perClientLimit() async throws {
        // A budget of one attempt, refilled after a minute: far longer than the bcrypt pass between
        // spending it and the checked request, however loaded the machine.
        func harness() throws -> Harness { try Harness { $0.signInsPerClientPerMinute = 1 } }
        let first = try harness()
        let initial = try await first.bootstrap("Acme", email: "admin@acme.test")
        try await first.run { api in
            #expect(try await api.signIn("admin@acme.test", "not the password").status == 401)
            // Spent by a password: over the limit for OpenID Connect, and even the right password is not checked.
            #expect(try await api.post("/api/v1/auth/oidc", nil, ["clientID": "x", "idToken": "y"]).status == 429)
            let limited = try await api.signIn("admin@acme.test", initial)
            #expect(limited.status == 429)
            #expect(limited.code == "too_many_requests")
            let wait = Int(limited.headers[.retryAfter] ?? "") ?? 0
            #expect((1...60).contains(wait), "\(limited.headers)")
        }
        let second = try harness()
        let secondInitial = try await second.bootstrap("Acme", email: "admin@acme.test")
        try await second.run { api in
            // Spent by OpenID Connect: over the limit for a password.
            let oidc = try await api.post("/api/v1/auth/oidc", nil, ["clientID": "x", "idToken": "y"])
            #expect(oidc.status == 511 && oidc.code == "id_token_invalid", "\(oidc)")
            #expect(try await api.signIn("admin@acme.test", secondInitial).status == 429)
        }
    }

    @Test("Guesses at the current password in a password change count against the same limit as sign-ins")
    func passwordChangeGuessesAreLimited() async throws {
        let harness = try Harness {
            $0.lockoutThreshold = 5; $0.lockoutSeconds = 60
        }
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let token = try await api.session("admin@acme.test", initial, newPassword: "the right password 1")
            for _ in 0..<5 { #expect(try await api.changePassword(token, from: "a wrong guess 123").code == "wrong_password") }
            // Locked out: the right password is not even checked, and sign-in is locked out too.
            #expect(try await api.changePassword(token, from: "the right password 1").code == "wrong_password")
            #expect(try await api.signIn("admin@acme.test", "the right password 1").status == 401)
            harness.clock.advance(61)
            #expect(try await api.changePassword(token, from: "the right password 1").status == 204)
            let audit = try await api.get("/api/v1/audit?action=change_password&outcome=denied", token)
            #expect(audit.items.filter { ($0["reason"] as? String) == "wrong_password" }.count == 5)
            #expect(audit.items.filter { ($0["reason"] as? String) == "throttled" }.count == 1)
        }
    }

    @Test("A locked-out account's password changes are refused at once: a signed-in session cannot keep bcrypt busy")
    func lockedOutPasswordChangesCostNoBcrypt() async throws {
        // One hash at a time and no queue: a refusal that still ran bcrypt would find it busy (503).
        let harness = try Harness {
            $0.lockoutThreshold = 2; $0.lockoutSeconds = 600; $0.bcryptConcurrency = 1; $0.bcryptQueue = 0
        }
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let token = try await api.session("admin@acme.test", initial, newPassword: "the right password 1")
            for _ in 0..<2 { #expect(try await api.changePassword(token, from: "a wrong guess 123").code == "wrong_password") }
            let replies = try await withThrowingTaskGroup(of: API.Reply.self) { group in
                for _ in 0..<10 { group.addTask { try await api.changePassword(token, from: "the right password 1") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(replies.map(\.code) == Array(repeating: "wrong_password", count: 10), "\(replies)")
            let audit = try await api.get("/api/v1/audit?action=change_password&outcome=denied", token)
            #expect(audit.items.filter { ($0["reason"] as? String) == "throttled" }.count == 10)
        }
    }

    @Test("Password changes count against the client's sign-in rate: 429 before the current password is checked")
    func passwordChangesShareTheClientLimit() async throws {
        let harness = try Harness { $0.signInsPerClientPerMinute = 3 }
        let services = try harness.services()
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run(over: services) { api in
            let token = try await api.session("admin@acme.test", initial, newPassword: "the right password 1")
            // The client's budget spent now, whatever the set-up's bcrypt passes took (one comes back
            // every 20 s): the limit is what is tested, not the machine's speed.
            func spend() { while services.clientLimiter.take("unknown", now: .now) == nil {} }
            spend()
            let limited = try await api.changePassword(token, from: "the right password 1")
            #expect(limited.status == 429 && limited.code == "too_many_requests", "\(limited)")
            spend()
            #expect(try await api.signIn("admin@acme.test", "the right password 1").status == 429)
            // Not counted as a guess: nothing was checked.
            let audit = try await api.get("/api/v1/audit?action=change_password&outcome=denied", token)
            #expect(audit.items.isEmpty)
        }
    }

    @Test("Wrong passwords from one client lock the account for others, not for a client the user signed in from")
    func aKnownClientOutlastsALockOut() async throws {
        // Behind a trusted proxy on 127.0.0.1, each request names its client in X-Forwarded-For.
        let harness = try Harness {
            $0.lockoutThreshold = 3; $0.lockoutSeconds = 600; $0.trustedProxies = ["127.0.0.1"]
        }
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run(live: true) { api in
            func attempt(_ password: String, from client: String) async throws -> Int {
                var headers = HTTPFields()
                headers[ClientAddress.forwardedFor] = client
                let body: [String: any Sendable] = ["email": "admin@acme.test", "password": password]
                return try await api.call(.post, "/api/v1/auth/sign-in", json: body, headers: headers).status
            }
            var statuses = [try await attempt(initial, from: "198.51.100.7")]
            for _ in 0..<3 { statuses.append(try await attempt("not the password", from: "203.0.113.66")) }
            // Locked out for a client that never had the password, the right one included.
            statuses.append(try await attempt(initial, from: "203.0.113.66"))
            statuses.append(try await attempt(initial, from: "192.0.2.1"))
            // The user's own client still signs in.
            statuses.append(try await attempt(initial, from: "198.51.100.7"))
            #expect(statuses == [200, 401, 401, 401, 401, 401, 200])
        }
    }

    @Test("At most a set number of failed sign-ins per account per hour")
    func hourlyLimit() async throws {
        let harness = try Harness {
            $0.signInFailuresPerHour = 8; $0.lockoutThreshold = 1000
        }
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            for _ in 0..<8 { _ = try await api.signIn("admin@acme.test", "not the password") }
            #expect(try await api.signIn("admin@acme.test", initial).status == 401)
            harness.clock.advance(1800)
            #expect(try await api.signIn("admin@acme.test", initial).status == 401)
            harness.clock.advance(1801)
            #expect(try await api.signIn("admin@acme.test", initial).status == 200)
        }
    }

    @Test("A sign-in storm beyond the bcrypt queue is turned away with 503 server_busy, and loses nothing")
    func storm() async throws {
        // One hash at a time and a queue of two: of ten sign-ins at once at most three can be taken.
        let harness = try Harness {
            $0.bcryptConcurrency = 1; $0.bcryptQueue = 2
        }
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let replies = try await withThrowingTaskGroup(of: API.Reply.self) { group in
                for _ in 0..<10 { group.addTask { try await api.signIn("admin@acme.test", initial) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let busy = replies.filter { $0.status == 503 }
            let served = replies.filter { $0.status == 200 }.count
            #expect(served + busy.count == 10, "\(replies)")
            #expect((1...3).contains(served), "\(replies)")
            for reply in busy {
                #expect(reply.code == "server_busy")
                #expect(reply.contentType == "application/problem+json")
                #expect(reply.headers[.retryAfter] == "1")
            }
            // A turned-away sign-in is not a failure: no lock-out, and the next one is served.
            #expect(try await api.signIn("admin@acme.test", initial).status == 200)
            let admin = try await api.session("admin@acme.test", initial)
            let audit = try await api.get("/api/v1/audit?action=sign_in&outcome=denied", admin)
            #expect(audit.items.isEmpty, "\(audit)")
        }
    }

    @Test("A storm from one network cannot keep another network's sign-in out of bcrypt's queue")
    func aStormFromOneNetworkLeavesRoomForOthers() async throws {
        // One hash at a time and a queue of two, behind a trusted proxy. The storm comes from one
        // IPv6 /48, each request from another /64 of it, so that no per-client limit stops it.
        // Cost 9, half the harness's: the queue's fairness does not depend on the cost, a hash
        // still takes many times an HTTP round trip (so the storm keeps the queue full), and a
        // request's wait of three hashes at nice 10 ends inside the client's 30-second deadline even
        // when every core is busy with the rest of the suite.
        let harness = try Harness {
            $0.bcryptCost = 9; $0.bcryptConcurrency = 1; $0.bcryptQueue = 2; $0.trustedProxies = ["127.0.0.1"]
        }
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run(live: true) { api in
            // Connections of their own (the test client has one): the requests must run at once.
            let http = APIClient(baseURL: "http://127.0.0.1:\(try #require(api.client.port))")
            func signIn(_ email: String, _ password: String, from client: String) async throws -> Int {
                let body: [String: any Sendable] = ["email": email, "password": password]
                return try await http.call("POST", "/api/v1/auth/sign-in", json: body, headers: ["X-Forwarded-For": client]).status
            }
            let storming = LockedBox(true)
            let sent = LockedBox(0)
            // Six senders keep the slot and the queue full: each sends again as soon as it is answered.
            async let storm = withThrowingTaskGroup(of: [Int].self) { group in
                for sender in 0..<6 {
                    group.addTask {
                        var statuses: [Int] = []
                        var n = 0
                        while storming.get() {
                            n += 1
                            sent.update { $0 += 1 }
                            let subnet = String((n * 6 + sender) % 0xffff, radix: 16)
                            let status = try await signIn("nobody\(sender)-\(n)@acme.test", "guess", from: "2001:db8:66:\(subnet)::1")
                            statuses.append(status)
                            // Turned away: again soon, as a client told Retry-After would not (but not in a
                            // tight loop, which would take the cores from bcrypt's lower-priority threads).
                            if status == 503 { try await Task.sleep(for: .milliseconds(20)) }
                        }
                        return statuses
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            try await Network.waitUntil("30 sign-ins of the storm sent", timeout: .seconds(60)) { sent.get() >= 30 }
            // Each of these finds the queue full of the storm's requests: one of those makes room.
            var mine: [Int] = []
            for _ in 0..<3 { mine.append(try await signIn("admin@acme.test", initial, from: "198.51.100.7")) }
            storming.set(false)
            let statuses = try await storm
            #expect(mine == [200, 200, 200], "\(mine)")
            #expect(statuses.contains(503) && statuses.allSatisfy { $0 == 401 || $0 == 503 }, "\(statuses)")
        }
    }

    @Test("An import's passwords wait their turn in a sign-in storm instead of failing the import")
    func anImportOutlastsAStorm() async throws {
        // One hash at a time and no queue: every sign-in that finds bcrypt busy is turned away.
        let harness = try Harness {
            $0.bcryptConcurrency = 1; $0.bcryptQueue = 0; $0.signInsPerClientPerMinute = 100_000
        }
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let admin = try await api.session("admin@acme.test", initial)
            let rows: [[String: any Sendable]] = (0..<4).map { ["email": "new\($0)@acme.test", "name": "N", "role": "employee", "securityLevel": 0] }
            // Sign-ins keep the one bcrypt slot busy for as long as the import hashes.
            let importing = LockedBox(true)
            async let storm = withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var statuses: [Int] = []
                        while importing.get() {
                            statuses.append(try await api.signIn("admin@acme.test", "a brand new password").status)
                            try await Task.sleep(for: .milliseconds(5))
                        }
                        return statuses
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let answer = try await api.post("/api/v1/users/import", admin, ["users": rows])
            importing.set(false)
            let statuses = try await storm
            #expect(answer.status == 200, "\(answer)")
            #expect((answer.json["created"] as? [[String: any Sendable]])?.count == 4, "\(answer)")
            #expect(statuses.contains(503) && statuses.allSatisfy { $0 == 200 || $0 == 503 }, "\(statuses)")
        }
    }

    @Test("An import stops hashing at the next row once its admin's session has ended")
    func anImportStopsWithItsSession() async throws {
        let harness = try Harness()
        let services = try harness.services()
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run(over: services) { api in
            let admin = try await api.session("admin@acme.test", initial)
            let rows: [[String: any Sendable]] = (0..<100).map {
                ["email": "new\($0)@acme.test", "name": "N", "role": "employee", "securityLevel": 0]
            }
            let before = services.hasher.hashesMade
            async let answer = api.post("/api/v1/users/import", admin, ["users": rows])
            try await Network.waitUntil("the import to hash", timeout: .seconds(30)) { services.hasher.hashesMade >= before + 2 }
            #expect(try await api.post("/api/v1/auth/sign-out", admin).status == 204)
            let atSignOut = services.hasher.hashesMade
            let reply = try await answer
            #expect(reply.status == 401 && reply.code == "unauthenticated", "\(reply)")
            // At most the row that was being hashed as the session ended, not the rest of the file.
            #expect(services.hasher.hashesMade <= atSignOut + 1, "\(services.hasher.hashesMade - before) of 100 rows hashed")
            let again = try await api.session("admin@acme.test", "a brand new password")
            #expect(try await api.get("/api/v1/users", again).items.count == 1)
        }
    }

    @Test("One import at a time per company, dry runs too; an employee's request takes no turn; other companies import meanwhile")
    func oneImportAtATimePerCompany() async throws {
        let harness = try Harness()
        let services = try harness.services()
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        let otherInitial = try await harness.bootstrap("Other", email: "admin@other.test")
        try await harness.run(over: services) { api in
            let admin = try await api.session("admin@acme.test", initial)
            let other = try await api.session("admin@other.test", otherInitial)
            _ = try await api.createUser(admin, "emp@acme.test", level: 0)
            let employee = try await api.session("emp@acme.test", "initial password 1")
            func rows(_ prefix: String, _ count: Int) -> [String: any Sendable] {
                let users: [[String: any Sendable]] = (0..<count).map {
                    ["email": "\(prefix)\($0)@acme.test", "name": "N", "role": "employee", "securityLevel": 0]
                }
                return ["users": users]
            }
            let before = services.hasher.hashesMade
            async let first = api.post("/api/v1/users/import", admin, rows("first", 60))
            try await Network.waitUntil("the import to hash", timeout: .seconds(30)) { services.hasher.hashesMade > before }

            let second = try await api.post("/api/v1/users/import", admin, rows("second", 1))
            #expect(second.status == 409 && second.code == "import_in_progress", "\(second)")
            let dryRun = try await api.post("/api/v1/users/import?dryRun=true", admin, rows("second", 1))
            #expect(dryRun.status == 409 && dryRun.code == "import_in_progress", "\(dryRun)")
            let byEmployee = try await api.post("/api/v1/users/import", employee, rows("third", 1))
            #expect(byEmployee.status == 403 && byEmployee.code == "admin_required", "\(byEmployee)")
            #expect(try await api.post("/api/v1/users/import?dryRun=true", other, rows("other", 1)).status == 200)

            let done = try await first
            #expect(done.status == 200 && (done.json["created"] as? [[String: any Sendable]])?.count == 60, "\(done)")
            // The turn is given back, also by an import refused.
            let clash = try await api.post("/api/v1/users/import", admin, rows("first", 1))
            #expect(clash.status == 422 && clash.code == "import_rejected", "\(clash)")
            #expect(try await api.post("/api/v1/users/import?dryRun=true", admin, rows("second", 1)).status == 200)
        }
    }

    @Test("A restarted server on the same file keeps everything, and valid sessions stay valid")
    func restartKeepsSessions() async throws {
        let harness = try Harness()
        let initial = try await harness.bootstrap("Acme", email: "admin@acme.test")
        let token = LockedBox("")
        let roomID = LockedBox("")
        try await harness.run { api in
            token.set(try await api.session("admin@acme.test", initial))
            roomID.set(try await api.createRoom(token.get(), "Lab"))
            _ = try await api.createUser(token.get(), "emp@acme.test", level: 3)
        }
        // A new store and application on the same database file.
        let restarted = Harness(copying: harness)
        let session = token.get()
        let room = roomID.get()
        try await restarted.run { (api: API) async throws in
            #expect(try await api.get("/api/v1/me", session).status == 200)
            #expect(try await api.get("/api/v1/rooms/\(room)", session).string("name") == "Lab")
            #expect(try await api.get("/api/v1/users", session).items.count == 2)
        }
    }
}

extension Harness {
    /// The same database file and settings, opened afresh as a restarted server would.
    init(copying other: Harness) {
        self.directory = other.directory
        self.store = try! SQLiteStore(path: other.configuration.databasePath)
        self.masterKey = other.masterKey
        self.configuration = other.configuration
    }
}
