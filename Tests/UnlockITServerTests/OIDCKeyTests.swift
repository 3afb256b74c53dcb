import Foundation
import JWTKit
import SiteHarness
import Testing

@testable import UnlockITServer

/// An issuer's published keys as real providers publish them: RSA keys without `alg`, and keys the
/// server cannot or must not verify with beside the signing ones.
@Suite(.timeLimit(.minutes(10)))
struct OIDCKeyTests {
    /// A test key (made for this test with `openssl genrsa 2048`; it protects nothing).
    static let pem = """
        -----BEGIN PRIVATE KEY-----
        MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCnb+mMsPc2Ifk0
        MVjxSM9k6IsKYvuer8k5tavOzLWNhQkLjA9LFHxhDL8QfqJqbb79SrqDzkzADCrR
        eRczXYrWFiK71cp440W+SdBatamO6uXb3aUoN2W1RnxE1KBkmjKWgDogCf0T9pls
        /fL6vfuDVFt3mEnmOFhECSk0zvnVpTqAcRX7UKvlrfjXJEcgMXJmHBDfO2b378ZJ
        26MbUBOwnlAuKVlhApGdFvH2F36VZ+c4ctLsR4nv+EO6l6Bspa1xd7dMvY5sOGtU
        n1ecuik0KtYe/rCYwxQqSmmjHKqtAkAruMtxD8ibQQ18yq2zN7PxeqWau5sincql
        J0iY86oFAgMBAAECggEACzTKBozMit60uVnJKGL1YH1Q2vnbedgtiVN/o3hfeVCL
        Va7C0kVVesBZ5E55a9KbCwROneY3jE30Kq9mTl2HHoN+QSCSq8sYPp9dlsicR9Cw
        YCoCNQIaKEsGo6uwbXNFif2chkrs2YJya9FGSyJefEBv274BSiuAutL7I0nr/jC0
        J9ZVD8dW9X3iFhmHPyRzXF3hxcNFy42pJJzlaz1nB98C4kV1lItUwHtfsq8kTvqx
        mkKTB6gUDYRcYphtpFxGIKToYAfUQt2lMADc7kVuoMwTmYMwfAsFc05Tr1Od65h1
        BZiawpYM08Ic4dRBka4IedYgbpwXm1Dm+IFnfax2IQKBgQDoHpFl2XGTdm8JrYkF
        UFevOJ78FsWOP9oiihTA+uXIoDgWm0WxQEPLZuEQT+iIc5qWBMCgwRTjTWyOICrJ
        K+jB/10b+tLkXgTyECVmv9lwhgqc3Mu2MHjcTj4Vkjw2Gau5F9kiUal1BYqXBD2B
        Cgw9rSqzGD/HZXwpJHl6NlGDZQKBgQC4qcd5B6+wmZGwq4h5B3IUBdSejtKzXI60
        aSXEXhZg/jdm5EXRxUO17KoLfi8jEL607zl7W8tZQMaxL0eEhPS+6ynw13xeOp8n
        DYYC8qfZ8vCefHG/wJv1KMulk8Fn4i48IofCCHWFVj7Dobvi6COHqsAFJK0pUhdE
        4lCgwSgyIQKBgQDGEm+YLbkRUJrn80FdW3W3e+WO0A+8lxgZKSMUmgTC8pVqFQ2f
        d2tigmPDe6y944giQ+PsSVb9r+/WR/S6vdFc2gAmBB856FDoDocb6tIthvQ/btoW
        mb5IoCuyVJs0vyseQw9yjaTAyv28aE3jcyOG7eHl+edSy3Lr2MggVYGxUQKBgG1b
        hhijt6TS3ReODcz23tUCuu6HUDoN9yjaGBaZTZF1GyQgzUQ0GSw0kmMqAAo5EWcf
        QKBQNTWPCdvGTwkon7QsmfLZ+fnnp3a+KH24bDTDDUIeGlLfYrylwyw0O1Yk+RJ9
        tH3w+n/TGmpKbnUq2leug/bHyJBu3/7YM71vhjlhAoGAUmDlKXEANV9DAuh/1CDc
        S9xdVyYzEe4R5REe+n+CCbOWi8QPtzUmyiOcOxYsyveJmuZOZtBqfsRwhCc3NiEE
        I6MU/Om4zteHdlNz3Zt9ZJRm7PPLF0cZUB7mMeOKNx0ufyNMx8T7iSvJ/cmrigNI
        wf+QuULkTuYpOlNSbv5svoc=
        -----END PRIVATE KEY-----
        """

    struct RSAProvider {
        let key: Insecure.RSA.PrivateKey
        let kid = "rsa-1"

        init() throws { key = try Insecure.RSA.PrivateKey(pem: OIDCKeyTests.pem) }

        /// The key as Microsoft Entra and others publish theirs: no `alg`.
        func jwk() throws -> String {
            let (modulus, exponent) = try key.publicKey.getKeyPrimitives()
            return #"{"kty":"RSA","use":"sig","kid":"\#(kid)","n":"\#(Self.base64URL(modulus))","e":"\#(Self.base64URL(exponent))"}"#
        }

        func token(email: String, now: Date) async throws -> String {
            let keys = JWTKeyCollection()
            await keys.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
            let claims = OIDCTests.IDToken(
                iss: .init(value: OIDCTests.issuer), sub: .init(value: "subject-\(email)"), aud: .init(value: [OIDCTests.clientID]),
                exp: .init(value: now + 3600), iat: .init(value: now), azp: nil, email: email, email_verified: true, nonce: UUID().uuidString)
            return try await keys.sign(claims, kid: JWKIdentifier(string: kid))
        }

        static func base64URL(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
    }

    func signIn(_ api: API, _ token: String) async throws -> API.Reply {
        try await api.post("/api/v1/auth/oidc", nil, ["clientID": OIDCTests.clientID, "idToken": token])
    }

    func site(publishing jwks: String) throws -> (Harness, TemporaryDirectory) {
        let directory = try TemporaryDirectory("unlockit-oidc-keys")
        let path = "\(directory.path)/jwks.json"
        try jwks.write(toFile: path, atomically: true, encoding: .utf8)
        let harness = try Harness {
            $0.oidcIssuers = [.init(issuer: OIDCTests.issuer, clientIDs: [OIDCTests.clientID], jwksFile: path, companies: ["*"])]
        }
        return (harness, directory)
    }

    @Test("A forged token cannot choose the algorithm of a key published without one")
    func aForgedHeaderDoesNotFixTheKeysAlgorithm() async throws {
        let provider = try RSAProvider()
        let (harness, directory) = try site(publishing: #"{"keys":[\#(try provider.jwk())]}"#)
        defer { directory.remove() }
        _ = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let real = try await provider.token(email: "admin@acme.test", now: harness.clock.now)
            // The same claims under a header naming PS256, the other algorithm an RSA key can do, and a junk signature.
            let parts = real.split(separator: ".")
            let header = RSAProvider.base64URL(Data(#"{"alg":"PS256","kid":"rsa-1","typ":"JWT"}"#.utf8))
            let forged = try await signIn(api, "\(header).\(parts[1]).AAAA")
            #expect(forged.status == 511, "\(forged)")
            // The key still checks RS256, as its type says: the real token signs in.
            let signedIn = try await signIn(api, real)
            #expect(signedIn.status == 200, "\(signedIn)")
        }
    }

    @Test("Keys the server cannot verify with are left out, not the issuer's whole set")
    func unusableKeysAreSkipped() async throws {
        let provider = try RSAProvider()
        let ec = try #require(ES256PrivateKey().publicKey.parameters)
        let others = [
            // For encryption, of a type and algorithm the verifier has no use for.
            #"{"kty":"RSA","use":"enc","alg":"RSA-OAEP-256","kid":"enc-1","n":"AQAB","e":"AQAB"}"#,
            // A shared secret: never a key to check an ID token with.
            #"{"kty":"oct","kid":"secret-1","k":"c2VjcmV0"}"#,
            // No kid.
            #"{"kty":"EC","crv":"P-256","x":"\#(ec.x)","y":"\#(ec.y)"}"#,
        ]
        let (harness, directory) = try site(publishing: #"{"keys":[\#(others.joined(separator: ",")),\#(try provider.jwk())]}"#)
        defer { directory.remove() }
        _ = try await harness.bootstrap("Acme", email: "admin@acme.test")
        try await harness.run { api in
            let signedIn = try await signIn(api, try await provider.token(email: "admin@acme.test", now: harness.clock.now))
            #expect(signedIn.status == 200, "\(signedIn)")
        }
    }

    @Test func signingKeysGetTheirAlgorithmFromTheirTypeAndCurve() throws {
        let all = ["RS256", "PS256", "ES256", "ES384", "EdDSA"]
        let keys = try SigningKeys.prepare(
            #"{"keys":[{"kty":"RSA","kid":"a","n":"AQAB","e":"AQAB"},{"kty":"EC","crv":"P-384","kid":"b","x":"AA","y":"AA"},"#
                + #"{"kty":"OKP","crv":"Ed25519","kid":"c","x":"AA"},{"kty":"RSA","kid":"d","alg":"PS256","n":"AQAB","e":"AQAB"},"#
                + #"{"kty":"EC","crv":"P-256","kid":"e","alg":"RS256","x":"AA","y":"AA"}]}"#, allowed: all)
        #expect(keys.algorithms == ["a": "RS256", "b": "ES384", "c": "EdDSA", "d": "PS256"])
        #expect(keys.skipped.count == 1)  // an EC key that claims an RSA algorithm
        #expect(keys.accept(alg: "RS256", kid: "a") && !keys.accept(alg: "PS256", kid: "a"))
        // A token must name one of several keys, and one the set has.
        #expect(!keys.accept(alg: "PS256", kid: nil) && !keys.accept(alg: "RS256", kid: "z"))
        let one = try SigningKeys.prepare(#"{"keys":[{"kty":"RSA","kid":"a","n":"AQAB","e":"AQAB"}]}"#, allowed: all)
        #expect(one.accept(alg: "RS256", kid: nil) && !one.accept(alg: "PS256", kid: nil))
        // Only what the issuer is configured for; with nothing left, the set is refused, saying why.
        #expect(throws: SigningKeys.NoSigningKey.self) {
            try SigningKeys.prepare(#"{"keys":[{"kty":"RSA","kid":"a","n":"AQAB","e":"AQAB"}]}"#, allowed: ["ES256"])
        }
    }

    @Test("What a provider wrote in a key set the server cannot use goes into its log escaped and cut short, its keys named by the first ten")
    func skippedKeyIDsAreEscaped() throws {
        let kid = #"x\n00:00 critical \u001b[2J\"\#(String(repeating: "y", count: 100))"#
        do {
            _ = try SigningKeys.prepare(#"{"keys":[{"kty":"RSA","kid":"\#(kid)","n":"AQAB","e":"AQAB"}]}"#, allowed: ["ES256"])
            Issue.record("a key set without a usable key was taken")
        } catch {
            let text = "\(error)"
            #expect(text.hasPrefix(#"no key the server can verify with ("x\u{A}00:00 critical \u{1B}[2J\u{22}yyy"#), "\(text)")
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 } && !text.contains(String(repeating: "y", count: 60)), "\(text)")
        }
        // The provider's other words in the reasons too, and a long list named by its first few.
        let forged = "x\\n00:00 critical"
        let keys =
            [
                #"{"kty":"RSA","kid":"a","use":"\#(forged)","n":"AQAB","e":"AQAB"}"#, #"{"kty":"\#(forged)","kid":"b"}"#,
                #"{"kty":"EC","kid":"c","crv":"\#(forged)","x":"AA","y":"AA"}"#,
            ] + (0..<20).map { #"{"kty":"oct","kid":"k\#($0)"}"# }
        do {
            _ = try SigningKeys.prepare(#"{"keys":[\#(keys.joined(separator: ","))]}"#, allowed: ["ES256"])
            Issue.record("a key set without a usable key was taken")
        } catch {
            let text = "\(error)"
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 }, "\(text)")
            #expect(text.components(separatedBy: #"x\u{A}00:00 critical"#).count == 4, "\(text)")
            #expect(text.hasSuffix("; and 13 more)") && !text.contains(#""k7""#), "\(text)")
        }
    }
}
