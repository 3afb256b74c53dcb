import Foundation
import Testing

@testable import LockProtocol

/// The wire's JSON reader, against the RFC's rules and against Foundation's parser.
@Suite struct FlatJSONTests {
    func parse(_ text: String) -> [String: FlatJSON.Value]? {
        guard let members = try? FlatJSON.parse(Array(text.utf8)) else { return nil }
        return Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
    }

    @Test func readsStringsIntegersAndBooleans() {
        let parsed = parse(#" { "a" : "x" , "b":-12,"c":true,"d":false,"e":null,"f":1.5,"g":[1,{"h":[]}],"i":{}} "#)
        #expect(parsed?["a"] == .string("x"))
        #expect(parsed?["b"] == .integer(-12))
        #expect(parsed?["c"] == .bool(true))
        #expect(parsed?["d"] == .bool(false))
        for key in ["e", "f", "g", "i"] { #expect(parsed?[key] == .other, "\(key)") }
        #expect(parse("{}")?.isEmpty == true)
    }

    @Test func decodesEveryEscape() {
        #expect(parse(#"{"s":"\"\\\/\b\f\n\r\t\u00e6\ud83d\udd11"}"#)?["s"] == .string("\"\\/\u{08}\u{0C}\n\r\tæ🔑"))
        #expect(parse(#"{"s":"plain æøå"}"#)?["s"] == .string("plain æøå"))
    }

    @Test(arguments: [
        "", "[]", "\"x\"", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{,}", "{\"a\":1 \"b\":2}", "{\"a\":01}", "{\"a\":-}", "{\"a\":1.}",
        "{\"a\":1e}", "{\"a\":tru}", "{\"a\":nul}", "{\"a\":\"\\x\"}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00\"}", "{\"a\":\"\u{01}\"}",
        "{\"a\":\"unterminated}", "{\"a\":[1,]}", "{'a':1}", "{a:1}", "{\"a\":1}x", "{\"a\":+1}",
        // Numbers beyond a double's range, which Foundation refuses.
        "{\"a\":1.5e734}", "{\"a\":-1e999}", "{\"a\":" + String(repeating: "9", count: 400) + "}",
        String(repeating: "[", count: 40) + String(repeating: "]", count: 40),
        "{\"a\":" + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}",
    ])
    func rejectsWhatJSONDoesNotAllow(text: String) {
        #expect(parse(text) == nil, "\(text.prefix(40))")
    }

    @Test func theWriterEscapesWhatJSONRequires() throws {
        let text = "a\"b\\c\u{01}\næ🔑"
        var writer = WireFormat.Writer(op: "state")
        writer.add("state", text)
        writer.add("granted", true)
        let bytes = writer.finish()
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"v":1,"op":"state","state":"a\"b\\c\u0001\u000aæ🔑","granted":true}"#)
        let members = try FlatJSON.parse(bytes)
        #expect(members.map(\.key) == ["v", "op", "state", "granted"])
        #expect(members[2].value == .string(text))
        let theirs = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        #expect(theirs?["state"] as? String == text)
    }

    @Test func rejectsInvalidUTF8() {
        #expect(
            (try? FlatJSON.parse([UInt8(ascii: "{"), UInt8(ascii: "\""), 0xff, UInt8(ascii: "\""), UInt8(ascii: ":"), 0x31, UInt8(ascii: "}")]))
                == nil)
    }

    /// Unescaped string bytes are taken exactly when they are well-formed UTF-8, as
    /// `String(validating:as:)` decides: in keys and values, in a string without escapes and after one.
    @Test func takesExactlyWellFormedUTF8() {
        let cases: [[UInt8]] = [
            [], Array("bench-000001".utf8), Array("æ🔑".utf8), [0xEF, 0xBF, 0xBD],  // U+FFFD itself
            [0xFF], [0x80], [0xC0, 0xAF],  // a lone continuation byte, an overlong "/"
            [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80],  // overlong, a UTF-16 surrogate
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80],  // beyond U+10FFFF
            [0xEF, 0xBF], [0xEF, 0xBF, 0x41], [0x41, 0xE2, 0x82],  // cut short
        ]
        var generator = SystemRandomNumberGenerator()
        // Random runs of bytes JSON allows unescaped in a string: 0x20 and above, but no quote or backslash.
        let allowed = (UInt8(0x20)...UInt8(0xFF)).filter { $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        let random = (0..<5_000).map { _ in
            (0..<Int.random(in: 1...6, using: &generator)).map { _ in allowed.randomElement(using: &generator)! }
        }
        for run in cases + random {
            let expected = String(validating: run, as: UTF8.self)
            let quoted = [UInt8(ascii: "\"")] + run + [UInt8(ascii: "\"")]
            let escaped = [UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "n")] + run + [UInt8(ascii: "\"")]
            let asValue = try? FlatJSON.parse(Array("{\"a\":".utf8) + quoted + [UInt8(ascii: "}")])
            let asKey = try? FlatJSON.parse([UInt8(ascii: "{")] + quoted + Array(":1}".utf8))
            let afterEscape = try? FlatJSON.parse(Array("{\"a\":".utf8) + escaped + [UInt8(ascii: "}")])
            #expect(asValue?.first?.value == expected.map { .string($0) }, "\(run)")
            #expect(asKey?.first?.key == expected, "\(run)")
            #expect(afterEscape?.first?.value == expected.map { .string("\n" + $0) }, "\(run)")
        }
    }

    @Test func largeNumbersAreNotIntegers() {
        #expect(parse(#"{"a":123456789012345678}"#)?["a"] == .integer(123_456_789_012_345_678))
        #expect(parse(#"{"a":1234567890123456789012}"#)?["a"] == .other)
    }

    /// Whatever this reader accepts, Foundation's accepts and reads the same way. (Foundation is the
    /// more lenient of the two: it also takes trailing commas, which RFC 8259 does not allow.)
    @Test func agreesWithFoundation() throws {
        var generator = SystemRandomNumberGenerator()
        let seeds = [
            Command.respond(req: RequestID("r-1")!, response: .random()).encoded(),
            Event.activated(req: RequestID("r-2")!, wrappedKey: .random(), kcv: [1, 2, 3]).encoded(),
            Array(#"{"a":"x\u00e6\n","b":[1,2,{"c":null}],"d":-0,"e":1.5e3,"f":true}"#.utf8),
        ]
        let alphabet = Array(#"{}[]":,\-0123456789.eEtrufalsn \u"#.utf8)
        for round in 0..<20_000 {
            var payload = seeds[round % seeds.count]
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<payload.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: payload[index] = alphabet.randomElement(using: &generator)!
                case 1: payload.remove(at: index)
                default: payload.insert(alphabet.randomElement(using: &generator)!, at: index)
                }
            }
            guard let members = try? FlatJSON.parse(payload) else { continue }
            let theirs = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
            #expect(theirs != nil, "\(String(decoding: payload, as: UTF8.self))")
            guard let theirs else { continue }
            // With a repeated key, Foundation keeps the last value.
            let ours = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
            for (key, value) in ours {
                switch value {
                case .string(let text): #expect(theirs[key] as? String == text)
                case .integer(let number): #expect((theirs[key] as? NSNumber)?.intValue == number)
                case .bool(let flag): #expect((theirs[key] as? NSNumber)?.boolValue == flag)
                case .other: break
                }
            }
        }
    }
}
