import Foundation
import HTTPTypes
import JWTKit
import SiteHarness
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

/// OpenID Connect sign-in against a key pair and JWKS the test makes itself.
@Suite(.timeLimit(.minutes(10)))
struct OIDCTests {
    static let issuer = "https://id.example.test"
    static let clientID = "unlockit-cli"

    struct IDToken: JWTPayload {
        var iss: IssuerClaim
        var sub: SubjectClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        var azp: String?
        var email: String
        var email_verified: Bool
        /// As a provider sets it for each authentication: no two tokens here have the same claims.
        var nonce: String
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// An identity provider: a signing key and its published JWKS file.
    struct Provider {
        let key = ES256PrivateKey()
        let kid: String

        func jwks() throws -> String { #"{"keys":[\#(try jwk())]}"# }

        /// Its public key as a JWK.
        func jwk() throws -> String {
            let parameters = try #require(key.publicKey.parameters)
            return #"{"kty":"EC","crv":"P-256","use":"sig","alg":"ES256","kid":"\#(kid)","x":"\#(parameters.x)","y":"\#(parameters.y)"}"#
        }

        /// A token it signed; `namingKey` false leaves `kid` out of its header. Its `sub` is the
        /// person's, the same whatever the case the address is written in, unless `subject` says.
        func token(
            email: String, issuer: String = OIDCTests.issuer, audience: String = OIDCTests.clientID, alsoFor others: [String] = [],
            authorizedParty: String? = nil, expires: Date, issued: Date, verified: Bool = true, namingKey: Bool = true,
            subject: String? = nil
        ) async throws -> String {
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: key, kid: JWKIdentifier(string: kid))
            let claims = IDToken(
                iss: .init(value: issuer), sub: .init(value: subject ?? "subject-\(email.lowercased())"), aud: .init(value: [audience] + others),
                exp: .init(value: expires), iat: .init(value: issued), azp: authorizedParty, email: email, email_verified: verified,
                nonce: UUID().uuidString)
            return try await keys.sign(claims, kid: namingKey ? JWKIdentifier(string: kid) : nil)
        }
    }

    /// The keys an issuer publishes, in a file of their own that the test can rewrite.
    struct KeysFile {
        let directory: TemporaryDirectory
        var path: String { "\(directory.path)/jwks.json" }

        init(publishing provider: Provider) throws {
            directory = try TemporaryDirectory("unlockit-oidc")
            try publish(provider)
        }

        func publish(_ provider: Provider) throws { try provider.jwks().write(toFile: path, atomically: true, encoding: .utf8) }

        /// Several providers' keys in one set, in this order.
        func publish(_ providers: [Provider]) throws {
            try #"{"keys":[\#(providers.map { try $0.jwk() }.joined(separator: ","))]}"#.write(toFile: path, atomically: true, encoding: .utf8)
        }
    }

    /// A server trusting one issuer, whose keys are in `keys`, with the company Acme and its admin
    /// (admin@acme.test, whose initial password is `password`).
    static func acme(trusting keys: KeysFile) async throws -> (harness: Harness, password: String) {
        let harness = try Harness { $0.oidcIssuers = [.init(issuer: Self.issuer, clientIDs: [Self.clientID], jwksFile: keys.path, companies: ["*"])] }
        return (harness, try await harness.bootstrap("Acme", email: "admin@acme.test"))
    }

    /// Runs `body` on Acme, trusting an issuer, with its admin's session, the id of Dave (an employee
    /// who signs in with OpenID Connect only) and an ID token of the issuer's for him.
    static func withOIDCOnlyDave(
        _ body: @Sendable (_ harness: Harness, _ api: API, _ admin: String, _ dave: String, _ idToken: String) async throws -> Void
    ) async throws {
        let provider = Provider(kid: "key-1")
        let keys = try KeysFile(publishing: provider)
        defer { keys.directory.remove() }
        let (harness, password) = try await acme(trusting: keys)
        let now = harness.clock.now
        try await harness.run { api in
            let admin = try await api.session("admin@acme.test", password)
            let created = try await api.post(
                "/api/v1/users", admin, ["email": "dave@acme.test", "name": "Dave", "role": "employee", "securityLevel": 1, "oidcOnly": true])
            let dave = try #require((created.json["user"] as? [String: any Sendable])?["id"] as? String, "\(created)")
            try await body(harness, api, admin, dave, try await provider.token(email: "dave@acme.test", expires: now + 3600, issued: now))
        }
    }

    @Test("An issuer whose keys cannot be loaded answers 503 identity_provider_unavailable, not a bad token")
    func unavailableKeysAreNotABadToken() async throws {
        let provider = Provider(kid: "key-1")
        let harness = try Harness {
            $0.oidcIssuers = [.init(issuer: Self.issuer, clientIDs: [Self.clientID], jwksFile: "/nonexistent/jwks.json", companies: ["*"])]
        }
        _ = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let token = try await provider.token(email: "admin@acme.test", expires: harness.clock.now + 3600, issued: harness.clock.now)
            let reply = try await api.post("/api/v1/auth/oidc", nil, ["clientID": Self.clientID, "idToken": token])
            #expect(reply.status == 503 && reply.code == "identity_provider_unavailable", "\(reply)")
            #expect(reply.headers[.retryAfter] == "30")
        }
    }

    @Test func idTokensSignInOnlyWhenEverythingChecksOut() async throws {
        let provider = Provider(kid: "key-1")
        let impostor = Provider(kid: "key-1")
        let keys = try KeysFile(publishing: provider)
        defer { keys.directory.remove() }
        let harness = try await Self.acme(trusting: keys).harness
        let now = harness.clock.now
        let hour: TimeInterval = 3600

        try await harness.run { api in
            func signIn(_ token: String, clientID: String = Self.clientID) async throws -> API.Reply {
                try await api.post("/api/v1/auth/oidc", nil, ["clientID": clientID, "idToken": token])
            }

            let good = try await signIn(try await provider.token(email: "Admin@Acme.test", expires: now + hour, issued: now))
            #expect(good.status == 200, "\(good)")
            let token = try #require(good.string("token"))
            #expect(good.json["lifetime"] as? Int == 8 * 3600)
            // The admin still has the bootstrap password: the server still wants it changed.
            #expect(try await api.get("/api/v1/me", token).code == "password_change_required")

            let cases: [(String, String, String)] = [
                (
                    "wrong audience", try await provider.token(email: "admin@acme.test", audience: "someone-else", expires: now + hour, issued: now),
                    Self.clientID
                ),
                (
                    "unconfigured client",
                    try await provider.token(email: "admin@acme.test", audience: "other-app", expires: now + hour, issued: now), "other-app"
                ),
                (
                    "wrong issuer", try await provider.token(email: "admin@acme.test", issuer: "https://evil.test", expires: now + hour, issued: now),
                    Self.clientID
                ),
                ("expired", try await provider.token(email: "admin@acme.test", expires: now - 120, issued: now - hour), Self.clientID),
                (
                    "issued in the future", try await provider.token(email: "admin@acme.test", expires: now + 2 * hour, issued: now + hour),
                    Self.clientID
                ),
                ("bad signature", try await impostor.token(email: "admin@acme.test", expires: now + hour, issued: now), Self.clientID),
                (
                    "unverified email", try await provider.token(email: "admin@acme.test", expires: now + hour, issued: now, verified: false),
                    Self.clientID
                ),
                ("not a JWT", "definitely.not.ajwt", Self.clientID),
                (
                    "several audiences, no authorized party",
                    try await provider.token(email: "admin@acme.test", alsoFor: ["other-app"], expires: now + hour, issued: now), Self.clientID
                ),
                (
                    "issued to another application",
                    try await provider.token(
                        email: "admin@acme.test", alsoFor: ["other-app"], authorizedParty: "other-app", expires: now + hour, issued: now),
                    Self.clientID
                ),
            ]
            // Each with its reason, in the API's snake_case.
            let reasons = [
                "wrong audience": "wrong_audience", "unconfigured client": "wrong_audience", "wrong issuer": "unknown_issuer",
                "expired": "expired", "issued in the future": "expired", "bad signature": "bad_signature",
                "unverified email": "email_not_verified", "not a JWT": "malformed", "several audiences, no authorized party": "wrong_audience",
                "issued to another application": "wrong_audience",
            ]
            for (name, idToken, clientID) in cases {
                let reply = try await signIn(idToken, clientID: clientID)
                #expect(reply.status == 511, "\(name): \(reply)")
                #expect(reply.code == "id_token_invalid", "\(name)")
                #expect(reply.string("reason") == reasons[name], "\(name): \(reply)")
            }

            // A token with the signature of an unsigned ("none") algorithm is refused too.
            let parts = try await provider.token(email: "admin@acme.test", expires: now + hour, issued: now).split(separator: ".")
            let noneHeader = Data(#"{"alg":"none","typ":"JWT"}"#.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
            #expect(try await signIn("\(noneHeader).\(parts[1]).").status == 511)

            // A valid token for someone without an account.
            let stranger = try await signIn(try await provider.token(email: "stranger@acme.test", expires: now + hour, issued: now))
            #expect(stranger.status == 403)
            #expect(stranger.code == "no_account")

            // Several audiences, issued to this client: that is a sign-in.
            let shared = try await signIn(
                try await provider.token(
                    email: "admin@acme.test", alsoFor: ["other-app"], authorizedParty: Self.clientID, expires: now + hour, issued: now))
            #expect(shared.status == 200, "\(shared)")
        }
    }

    /// The same token with its ECDSA signature (r, s) rewritten as (r, n − s), which verifies as well.
    static func withOtherSignature(_ token: String) throws -> String {
        // The order n of P-256's group.
        let order: [UInt8] = [
            0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
        ]
        let parts = token.split(separator: ".")
        let signature = try #require(OIDCVerifier.base64URLDecode(parts[2]).map(Array.init))
        try #require(signature.count == 64)
        var s = Array(signature[32...])
        var borrow = 0
        for index in (0..<32).reversed() {
            let difference = Int(order[index]) - Int(s[index]) - borrow
            s[index] = UInt8((difference + 256) % 256)
            borrow = difference < 0 ? 1 : 0
        }
        let rewritten = Data(signature[..<32] + s).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return "\(parts[0]).\(parts[1]).\(rewritten)"
    }

    @Test("An ID token signs in once, however it is presented again")
    func anIDTokenSignsInOnce() async throws {
        let provider = Provider(kid: "key-1")
        let keys = try KeysFile(publishing: provider)
        defer { keys.directory.remove() }
        let (harness, password) = try await Self.acme(trusting: keys)
        let now = harness.clock.now
        try await harness.run { api in
            func signIn(_ token: String) async throws -> API.Reply {
                try await api.post("/api/v1/auth/oidc", nil, ["clientID": Self.clientID, "idToken": token])
            }
            func fresh() async throws -> String { try await provider.token(email: "admin@acme.test", expires: now + 3600, issued: now) }

            let token = try await fresh()
            #expect(try await signIn(token).status == 200)
            let again = try await signIn(token)
            #expect(again.status == 511 && again.code == "id_token_invalid" && again.string("reason") == "reused", "\(again)")

            // The rewritten signature verifies: alone, it signs in. But it is the same token.
            let other = try await fresh()
            #expect(try await signIn(Self.withOtherSignature(other)).status == 200)
            #expect(try await signIn(other).status == 511)

            // Presented several times at once, it starts one session.
            let raced = try await fresh()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 { group.addTask { try await signIn(raced).status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.sorted() == [200, 511, 511, 511], "\(statuses)")

            // Each copy is a denied sign-in in the company's audit log.
            let admin = try await api.session("admin@acme.test", password)
            let audit = try await api.get("/api/v1/audit?action=sign_in&outcome=denied", admin)
            #expect(audit.items.map { $0["reason"] as? String } == Array(repeating: "id_token_reused", count: 5), "\(audit)")
        }
    }

    @Test(
        "A user is linked to the account at the issuer they first sign in with; another account with their email is refused until an admin unlinks them"
    )
    func usersAreLinkedToTheirAccountAtTheIssuer() async throws {
        let provider = Provider(kid: "key-1")
        let keys = try KeysFile(publishing: provider)
        defer { keys.directory.remove() }
        let (harness, password) = try await Self.acme(trusting: keys)
        try await harness.run { api in
            func signIn(_ email: String, subject: String) async throws -> API.Reply {
                let now = harness.clock.now
                let idToken = try await provider.token(email: email, expires: now + 3600, issued: now, subject: subject)
                return try await api.post("/api/v1/auth/oidc", nil, ["clientID": Self.clientID, "idToken": idToken])
            }
            let admin = try await api.session("admin@acme.test", password)
            let created = try await api.post(
                "/api/v1/users", admin, ["email": "dave@acme.test", "name": "Dave", "role": "employee", "securityLevel": 1, "oidcOnly": true])
            let dave = try #require((created.json["user"] as? [String: any Sendable])?["id"] as? String, "\(created)")
            // Dave's first sign-in links him to his account; it signs him in again.
            func issuers(_ user: String) async throws -> [String]? {
                try await api.get("/api/v1/users/\(user)", admin).json["oidcIssuers"] as? [String]
            }
            #expect(try await issuers(dave) == [])
            #expect(try await signIn("dave@acme.test", subject: "dave-1").status == 200)
            #expect(try await signIn("dave@acme.test", subject: "dave-1").status == 200)
            // The admin sees at which issuer, not the account's subject; lists do not say.
            #expect(try await issuers(dave) == [Self.issuer])
            let listed = try await api.get("/api/v1/users", admin)
            #expect(!listed.text.contains("oidcIssuers") && !listed.text.contains("dave-1"), "\(listed)")
            // His address passed to someone else at the issuer: their account does not get his here.
            let other = try await signIn("dave@acme.test", subject: "someone-else")
            #expect(other.status == 511 && other.code == "id_token_invalid" && other.json["reason"] as? String == "identity_mismatch", "\(other)")
            // Nor does his account get another user's, should the issuer give it their address.
            let erin = try await api.post(
                "/api/v1/users", admin, ["email": "erin@acme.test", "name": "Erin", "role": "employee", "securityLevel": 1, "oidcOnly": true])
            #expect(erin.status == 201)
            let taken = try await signIn("erin@acme.test", subject: "dave-1")
            #expect(taken.status == 511 && taken.json["reason"] as? String == "identity_mismatch", "\(taken)")
            let denied = try await api.get("/api/v1/audit?action=sign_in&outcome=denied", admin)
            #expect(denied.items.map { $0["reason"] as? String } == ["identity_mismatch", "identity_mismatch"], "\(denied)")

            // Only an admin unlinks, only their own company's users, and the unlinking is audited.
            let employee = try await signIn("erin@acme.test", subject: "erin-1")
            #expect(employee.status == 200, "\(employee)")
            let erinToken = try #require(employee.string("token"))
            #expect(try await api.call(.delete, "/api/v1/users/\(dave)/identities", token: erinToken, raw: nil).code == "admin_required")
            let missing = try await api.call(.delete, "/api/v1/users/\(UUID().uuidString.lowercased())/identities", token: admin, raw: nil)
            #expect(missing.status == 404 && missing.code == "user_not_found", "\(missing)")
            let unlinked = try await api.call(.delete, "/api/v1/users/\(dave)/identities", token: admin, raw: nil)
            #expect(unlinked.status == 200 && unlinked.json["unlinked"] as? Int == 1, "\(unlinked)")
            #expect(try await issuers(dave) == [])
            let again = try await api.call(.delete, "/api/v1/users/\(dave)/identities", token: admin, raw: nil)
            #expect(again.status == 200 && again.json["unlinked"] as? Int == 0, "\(again)")
            let log = try await api.get("/api/v1/audit?action=unlink_identities", admin)
            #expect(log.items.count == 1 && log.items.first?["subjectId"] as? String == dave, "\(log)")

            // Dave's next sign-in links the account it is made with, and only that one signs him in after.
            #expect(try await signIn("dave@acme.test", subject: "dave-2").status == 200)
            #expect(try await signIn("dave@acme.test", subject: "dave-1").json["reason"] as? String == "identity_mismatch")
        }
    }

    @Test("A user deleted while their ID token is checked is answered as an email without an account")
    func aUserDeletedMeanwhileHasNoAccount() async throws {
        try await Self.withOIDCOnlyDave { harness, api, _, dave, idToken in
            // Deleted while the sign-in runs: it still reads Dave, and its write of the session sees him gone.
            let reply = try await harness.whileUncommitted("DELETE FROM user WHERE id = ?", [dave]) {
                try await api.post("/api/v1/auth/oidc", nil, ["clientID": Self.clientID, "idToken": idToken])
            }
            #expect(reply.status == 403 && reply.code == "no_account", "\(reply)")
        }
    }

    @Test("An admin's password reset gives a user who signs in with OpenID Connect only no password")
    func aResetGivesAnOIDCOnlyUserNoPassword() async throws {
        try await Self.withOIDCOnlyDave { _, api, admin, dave, idToken in
            let signedIn = try #require(
                try await api.post("/api/v1/auth/oidc", nil, ["clientID": Self.clientID, "idToken": idToken]).string("token"))
            // Neither a password the server chooses nor one the admin does: a way in around the identity provider.
            for body: [String: any Sendable] in [[:], ["password": "chosen by the admin 1"]] {
                let reset = try await api.post("/api/v1/users/\(dave)/password", admin, body)
                #expect(reset.status == 409 && reset.code == "no_password", "\(reset)")
            }
            #expect(try await api.signIn("dave@acme.test", "chosen by the admin 1").status == 401)
            // Nothing else changed: his session goes on, and no reset is in the log.
            #expect(try await api.get("/api/v1/me", signedIn).status == 200)
            let log = try await api.get("/api/v1/audit?action=change_password", admin)
            #expect(log.status == 200 && !log.items.contains { ($0["subjectId"] as? String) == dave }, "\(log)")
        }
    }

    @Test("A reset refused for a user without a password is refused before bcrypt: it makes no hash")
    func aRefusedResetMakesNoHash() async throws {
        let harness = try Harness()
        let services = try harness.services()
        let acme = try await harness.bootstrapCompany("Acme", email: "admin@acme.test")
        let now = harness.clock.now
        let sso = User(
            id: .generate(), companyID: acme.id, email: "sso@acme.test", name: "S", role: .employee, securityLevel: 0, enabled: true,
            mustChangePassword: false, createdAt: now, updatedAt: now)
        try await harness.store.createUser(
            sso, passwordHash: nil, checking: nil,
            audit: AuditEvent(companyID: acme.id, at: now, actorID: nil, action: .createUser, outcome: .success))
        try await harness.run(over: services) { api in
            let admin = try await api.session("admin@acme.test", acme.password)
            let before = services.hasher.hashesMade
            let reset = try await api.post("/api/v1/users/\(sso.id)/password", admin, ["password": "chosen by the admin 1"])
            #expect(reset.status == 409 && reset.code == "no_password", "\(reset)")
            #expect(services.hasher.hashesMade == before)
        }
    }

    @Test("A token that names no key signs in only while its issuer publishes one key (OpenID Connect Core 1.0, 10.1)")
    func aTokenNamingNoKeyNeedsAnIssuerWithOne() async throws {
        let provider = Provider(kid: "key-1")
        let keys = try KeysFile(publishing: provider)
        defer { keys.directory.remove() }
        let harness = try await Self.acme(trusting: keys).harness
        try await harness.run { api in
            func signIn(namingKey: Bool) async throws -> API.Reply {
                let now = harness.clock.now
                let idToken = try await provider.token(email: "admin@acme.test", expires: now + 3600, issued: now, namingKey: namingKey)
                return try await api.post("/api/v1/auth/oidc", nil, ["clientID": Self.clientID, "idToken": idToken])
            }
            #expect(try await signIn(namingKey: false).status == 200)
            // With a second key published (after the signing one, which jwt-kit would take for any
            // token that names none), which of them signed has to be said.
            try keys.publish([provider, Provider(kid: "key-2")])
            harness.clock.advance(3601)
            let unnamed = try await signIn(namingKey: false)
            #expect(unnamed.status == 511 && unnamed.json["reason"] as? String == "bad_signature", "\(unnamed)")
            #expect(try await signIn(namingKey: true).status == 200)
        }
    }

    @Test("After the issuer rotates its key, a token signed with the new one signs in without waiting an hour")
    func aRotatedKeyIsFetched() async throws {
        let old = Provider(kid: "key-old")
        let new = Provider(kid: "key-new")
        let keys = try KeysFile(publishing: old)
        defer { keys.directory.remove() }
        let harness = try await Self.acme(trusting: keys).harness
        try await harness.run { api in
            func signIn(_ provider: Provider) async throws -> API.Reply {
                let now = harness.clock.now
                let idToken = try await provider.token(email: "admin@acme.test", expires: now + 3600, issued: now)
                return try await api.post("/api/v1/auth/oidc", nil, ["clientID": Self.clientID, "idToken": idToken])
            }
            // The first sign-ins after the start arrive together: they share the one fetch of the keys.
            let first = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<6 { group.addTask { try await signIn(old).status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(first == Array(repeating: 200, count: 6), "\(first)")
            try keys.publish(new)
            // Keys were fetched moments ago: not again yet, whatever the tokens.
            #expect(try await signIn(new).status == 511)
            harness.clock.advance(OIDCVerifier.refetchInterval + 1)
            #expect(try await signIn(new).status == 200)
            // The old key is gone from the issuer's list, and so from the server's.
            #expect(try await signIn(old).status == 511)
        }
    }

    @Test("While an issuer's keys cannot be fetched, those it published last serve for a day after their fetch, and no longer")
    func staleKeysServeForADay() async throws {
        let provider = Provider(kid: "key-1")
        let keys = try KeysFile(publishing: provider)
        defer { keys.directory.remove() }
        let harness = try await Self.acme(trusting: keys).harness
        try await harness.run { api in
            func signIn() async throws -> API.Reply {
                let now = harness.clock.now
                let idToken = try await provider.token(email: "admin@acme.test", expires: now + 3600, issued: now)
                return try await api.post("/api/v1/auth/oidc", nil, ["clientID": Self.clientID, "idToken": idToken])
            }
            #expect(try await signIn().status == 200)
            try FileManager.default.removeItem(atPath: keys.path)
            // Past the hourly refresh, whose fetches fail: the keys loaded stay in use…
            harness.clock.advance(3601)
            #expect(try await signIn().status == 200)
            harness.clock.advance(OIDCVerifier.staleKeysLimit - 3601 - 60)
            #expect(try await signIn().status == 200)
            // … until a day after they were fetched.
            harness.clock.advance(120)
            let stale = try await signIn()
            #expect(stale.status == 503 && stale.code == "identity_provider_unavailable", "\(stale)")
            // Once they can be fetched again, sign-ins work again.
            try keys.publish(provider)
            harness.clock.advance(OIDCVerifier.refetchInterval + 1)
            #expect(try await signIn().status == 200)
        }
    }

    @Test("A user who signs in with OpenID Connect only needs an issuer that signs in their company")
    func oidcOnlyUsersNeedAnIssuer() async throws {
        var harness = try Harness()
        let acme = try await harness.bootstrapCompany("Acme", email: "admin@acme.test")
        let globex = try await harness.bootstrapCompany("Globex", email: "admin@globex.test")
        harness.configuration.oidcIssuers = [
            .init(issuer: Self.issuer, clientIDs: [Self.clientID], jwksFile: "/nonexistent", companies: [acme.id.rawValue])
        ]
        try await harness.run { api in
            let acmeAdmin = try await api.session("admin@acme.test", acme.password)
            let globexAdmin = try await api.session("admin@globex.test", globex.password)
            let body: [String: any Sendable] = ["email": "sso@x.test", "name": "S", "role": "admin", "securityLevel": 0, "oidcOnly": true]
            let refused = try await api.post("/api/v1/users", globexAdmin, body)
            #expect(refused.status == 409 && refused.code == "no_oidc_issuer", "\(refused)")
            let imported = try await api.post("/api/v1/users/import?dryRun=true", globexAdmin, ["users": [body]])
            #expect(imported.status == 422, "\(imported)")
            #expect((imported.json["errors"] as? [[String: any Sendable]])?.first?["reason"] as? String == "no_oidc_issuer", "\(imported)")
            // Acme's issuer signs in Acme's users: there it is a user like any other.
            #expect(try await api.post("/api/v1/users", acmeAdmin, body).status == 201)
        }
    }

    @Test("With an issuer per company, each signs in its own company's users only")
    func issuersSignInOnlyTheirCompanies() async throws {
        let acmeProvider = Provider(kid: "acme-1")
        let globexProvider = Provider(kid: "globex-1")
        let (acmeIssuer, globexIssuer) = ("https://id.acme.test", "https://id.globex.test")
        let directory = try TemporaryDirectory("unlockit-oidc")
        defer { directory.remove() }
        try acmeProvider.jwks().write(toFile: "\(directory.path)/acme.json", atomically: true, encoding: .utf8)
        try globexProvider.jwks().write(toFile: "\(directory.path)/globex.json", atomically: true, encoding: .utf8)

        var harness = try Harness()
        let acme = try await harness.bootstrapCompany("Acme", email: "admin@acme.test")
        let globex = try await harness.bootstrapCompany("Globex", email: "admin@globex.test")
        // Without the companies each may sign in, two issuers are a configuration error.
        harness.configuration.oidcIssuers = [
            .init(issuer: acmeIssuer, clientIDs: [Self.clientID], jwksFile: "\(directory.path)/acme.json"),
            .init(issuer: globexIssuer, clientIDs: [Self.clientID], jwksFile: "\(directory.path)/globex.json"),
        ]
        let unnamed = #expect(throws: ServerConfiguration.ConfigurationError.self) { try harness.validateAsServer() }
        #expect(unnamed?.description.contains("needs companies") == true, "\(String(describing: unnamed))")
        harness.configuration.oidcIssuers[0].companies = [acme.id.rawValue]
        harness.configuration.oidcIssuers[1].companies = ["not a company id"]
        let misnamed = #expect(throws: ServerConfiguration.ConfigurationError.self) { try harness.validateAsServer() }
        #expect(misnamed?.description.contains("must be one or more company ids") == true, "\(String(describing: misnamed))")
        harness.configuration.oidcIssuers[1].companies = [globex.id.rawValue]
        try harness.validateAsServer()

        let now = harness.clock.now
        let hour: TimeInterval = 3600
        try await harness.run { api in
            func signIn(_ provider: Provider, _ issuer: String, _ email: String) async throws -> API.Reply {
                let idToken = try await provider.token(email: email, issuer: issuer, expires: now + hour, issued: now)
                return try await api.post("/api/v1/auth/oidc", nil, ["clientID": Self.clientID, "idToken": idToken])
            }
            // Globex's provider vouching for Acme's admin is answered as if there were no account.
            let forged = try await signIn(globexProvider, globexIssuer, "admin@acme.test")
            let stranger = try await signIn(globexProvider, globexIssuer, "stranger@acme.test")
            #expect(forged.status == 403, "\(forged)")
            #expect(forged.code == "no_account")
            #expect(forged.body == stranger.body)
            // Each provider signs in its own company's users.
            #expect(try await signIn(acmeProvider, acmeIssuer, "admin@acme.test").status == 200)
            #expect(try await signIn(globexProvider, globexIssuer, "admin@globex.test").status == 200)
            #expect(try await signIn(acmeProvider, acmeIssuer, "admin@globex.test").code == "no_account")

            // The refused attempts are in Acme's audit log (and Globex's), with their reason.
            let acmeAdmin = try await api.session("admin@acme.test", acme.password)
            let audit = try await api.get("/api/v1/audit?action=sign_in&outcome=denied", acmeAdmin)
            #expect(audit.items.map { $0["reason"] as? String } == ["issuer_not_trusted"])
            let globexAdmin = try await api.session("admin@globex.test", globex.password)
            let globexAudit = try await api.get("/api/v1/audit?action=sign_in&outcome=denied", globexAdmin)
            #expect(globexAudit.items.map { $0["reason"] as? String } == ["issuer_not_trusted"])
        }
    }
}
