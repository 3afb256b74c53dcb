import Foundation
import JWTKit
import SiteHarness
import Testing

@testable import UnlockITServer

/// OpenID Connect sign-in against a key pair and JWKS the test makes itself.
@Suite(.timeLimit(.minutes(2)))
struct OIDCTests {
    static let issuer = "https://id.example.test"
    static let clientID = "unlockit-cli"

    struct IDToken: JWTPayload {
        var iss: IssuerClaim
        var sub: SubjectClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        var email: String
        var email_verified: Bool
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// An identity provider: a signing key and its published JWKS file.
    struct Provider {
        let key = ES256PrivateKey()
        let kid: String

        func jwks() throws -> String {
            let parameters = try #require(key.publicKey.parameters)
            return #"{"keys":[{"kty":"EC","crv":"P-256","use":"sig","alg":"ES256","kid":"\#(kid)","x":"\#(parameters.x)","y":"\#(parameters.y)"}]}"#
        }

        func token(
            email: String, issuer: String = OIDCTests.issuer, audience: String = OIDCTests.clientID, expires: Date, issued: Date,
            verified: Bool = true
        ) async throws -> String {
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: key, kid: JWKIdentifier(string: kid))
            let claims = IDToken(
                iss: .init(value: issuer), sub: .init(value: "subject-\(email)"), aud: .init(value: [audience]), exp: .init(value: expires),
                iat: .init(value: issued), email: email, email_verified: verified)
            return try await keys.sign(claims, kid: JWKIdentifier(string: kid))
        }
    }

    @Test func idTokensSignInOnlyWhenEverythingChecksOut() async throws {
        let provider = Provider(kid: "key-1")
        let impostor = Provider(kid: "key-1")
        let directory = try TemporaryDirectory("unlockit-oidc")
        defer { directory.remove() }
        let jwksPath = "\(directory.path)/jwks.json"
        try provider.jwks().write(toFile: jwksPath, atomically: true, encoding: .utf8)

        let harness = try Harness {
            $0.oidcIssuers = [.init(issuer: Self.issuer, clientIDs: [Self.clientID], jwksFile: jwksPath)]
        }
        _ = try await harness.bootstrap("Acme", email: "admin@acme.test")
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
            ]
            for (name, idToken, clientID) in cases {
                let reply = try await signIn(idToken, clientID: clientID)
                #expect(reply.status == 511, "\(name): \(reply)")
                #expect(reply.code == "id_token_invalid", "\(name)")
            }

            // A token with the signature of an unsigned ("none") algorithm is refused too.
            let parts = try await provider.token(email: "admin@acme.test", expires: now + hour, issued: now).split(separator: ".")
            let noneHeader = Data(#"{"alg":"none","typ":"JWT"}"#.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
            #expect(try await signIn("\(noneHeader).\(parts[1]).").status == 511)

            // A valid token for someone without an account.
            let stranger = try await signIn(try await provider.token(email: "stranger@acme.test", expires: now + hour, issued: now))
            #expect(stranger.status == 403)
            #expect(stranger.code == "no_account")
        }
    }
}
