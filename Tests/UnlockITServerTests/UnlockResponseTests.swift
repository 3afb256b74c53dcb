import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import UnlockITServer

@Suite struct UnlockResponseTests {
    /// Every character that JSON escapes, some that it does not, and text beyond ASCII.
    static let strings = [
        "bench-000001", "lock-theta", "granted", "", "a\"b", "back\\slash", "a/b", "\u{08}\u{0C}\n\r\t", "\u{00}\u{01}\u{1F}\u{7F}",
        "Ærø ✓ 🔑", "e\u{301}",
    ]

    @Test func theAnswerIsWhatTheAPIsEncoderWrites() async throws {
        let router = Router()
        router.post("unlock/:index/:granted") { _, context in
            let text = Self.strings[try context.parameters.require("index", as: Int.self)]
            return UnlockController.Unlocked(lockId: text, granted: context.parameters.get("granted") == "true", outcome: text + "!")
        }
        try await Application(router: router).test(.router) { client in
            for (index, text) in Self.strings.enumerated() {
                for granted in [true, false] {
                    try await client.execute(uri: "/unlock/\(index)/\(granted)", method: .post) { response in
                        let expected = try APIJSON.encoder.encode(UnlockController.Unlocked(lockId: text, granted: granted, outcome: text + "!"))
                        #expect(response.status == .ok)
                        #expect(response.headers[.contentType] == "application/json; charset=utf-8")
                        #expect(response.headers[.contentLength] == String(expected.count))
                        #expect(String(buffer: response.body) == String(decoding: expected, as: UTF8.self), "\(text.debugDescription)")
                    }
                }
            }
        }
    }
}
