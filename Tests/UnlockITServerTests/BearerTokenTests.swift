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
}
