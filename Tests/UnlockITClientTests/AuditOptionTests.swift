import ArgumentParser
import Testing

@testable import UnlockITClient

/// `unlockit audit`'s options, checked before anything is sent.
@Suite struct AuditOptionTests {
    @Test func beforeIsAnEventID() throws {
        for value in ["0", "-3"] {
            #expect(throws: (any Error).self, "\(value)") { _ = try Audit.parse(["--before", value]) }
            do {
                _ = try Audit.parse(["--before", value])
            } catch {
                #expect(Audit.exitCode(for: error) == .validationFailure, "\(value)")
                #expect(Audit.message(for: error).contains("--before"), "\(Audit.message(for: error))")
            }
        }
        #expect(try Audit.parse(["--before", "1"]).before == 1)
        #expect(try Audit.parse([]).before == nil)
    }
}
