import HTTPTypes
import Testing

@testable import UnlockITServer

@Suite struct BearerTokenTests {
    @Test("The bearer token is read from the Authorization header, the scheme in any case")
    func parsing() {
        func token(_ value: String?) -> String? {
            var fields = HTTPFields()
            if let value { fields[.authorization] = value }
            return fields.bearerToken
        }
        #expect(token("Bearer uit_abc") == "uit_abc")
        #expect(token("bearer uit_abc") == "uit_abc")
        #expect(token("BEARER   uit_abc") == "uit_abc")
        #expect(token(nil) == nil)
        #expect(token("Basic dXNlcjpwYXNz") == nil)
        #expect(token("Bearer") == nil)
        #expect(token("Bearerx uit_abc") == nil)
        #expect(token("uit_abc") == nil)
    }

    @Test("A session token's shape: the prefix and 43 base64url characters, nothing else")
    func shape() {
        let body = String(repeating: "aZ0-_", count: 8) + "xyz"
        let short = String(body.dropLast())
        #expect(SessionTokens.isWellFormed("uit_" + body))
        #expect(SessionTokens.isWellFormed(SessionTokens.generate()))
        let wrongPrefix: [String] = ["UIT_" + body, "uat_" + body, "uit" + body + "a", "", "uit_"]
        let wrongLength: [String] = ["uit_" + short, "uit_" + body + "a"]
        // 43 bytes each, one of them not base64url ("é" is two bytes).
        let wrongCharacter: [String] = ["=", "+", "/", ".", " "].map { "uit_" + short + $0 } + ["uit_" + body.dropLast(2) + "é"]
        for bad in wrongPrefix + wrongLength + wrongCharacter {
            #expect(!SessionTokens.isWellFormed(bad), "\(bad)")
        }
    }
}
