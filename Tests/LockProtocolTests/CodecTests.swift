import LockProtocol
import Testing

@Suite struct CodecTests {
    let req = RequestID("r-1")!
    let block = Block128([UInt8](0..<16))!

    @Test func everyMessageRoundTrips() throws {
        let commands: [Command] = [
            .activate(req: req), .challenge(req: req), .respond(req: req, response: block), .confirm(req: req, response: block),
        ]
        for command in commands { #expect(try Command.decode(command.encoded()) == command) }
        let events: [Event] = [
            .activated(req: req, wrappedKey: block, kcv: [1, 2, 3]), .nonce(req: req, nonce: block), .result(req: req, granted: true, reason: nil),
            .result(req: req, granted: false, reason: .expired), .error(req: req, reason: .notInPairingMode), .state(.unlocked), .state(.locked),
        ]
        for event in events { #expect(try Event.decode(event.encoded()) == event) }
        for status in [LockStatus(online: true, activated: false, firmware: "1.2.3"), LockStatus(online: false)] {
            #expect(try LockStatus.decode(status.encoded()) == status)
        }
    }

    @Test(
        arguments: [
            (#"not json"#, ProtocolError.malformedJSON),
            (#"[1,2]"#, .malformedJSON),
            (#""text""#, .malformedJSON),
            (#"{"op":"challenge","req":"a"}"#, .missingField("v")),
            (#"{"v":"1","op":"challenge","req":"a"}"#, .invalidField("v")),
            (#"{"v":2,"op":"challenge","req":"a"}"#, .unsupportedVersion(2)),
            (#"{"v":1,"req":"a"}"#, .missingField("op")),
            (#"{"v":1,"op":7,"req":"a"}"#, .invalidField("op")),
            (#"{"v":1,"op":"open","req":"a"}"#, .unknownOp("open")),
            (#"{"v":1,"op":"nonce","req":"a","nonce":"00"}"#, .unknownOp("nonce")),
            (#"{"v":1,"op":"challenge"}"#, .missingField("req")),
            (#"{"v":1,"op":"challenge","req":""}"#, .invalidField("req")),
            (#"{"v":1,"op":"challenge","req":"a/b"}"#, .invalidField("req")),
            (#"{"v":1,"op":"challenge","req":"a","extra":1}"#, .unexpectedField("extra")),
            (#"{"v":1,"op":"challenge","req":"a","req":"b"}"#, .invalidField("req")),
            (#"{"v":1.0,"op":"challenge","req":"a"}"#, .invalidField("v")),
            (#"{"v":1,"op":"challenge","req":null}"#, .invalidField("req")),
            (#"{"v":1,"op":"challenge","req":"a","response":"00"}"#, .unexpectedField("response")),
            (#"{"v":1,"op":"respond","req":"a"}"#, .missingField("response")),
            (#"{"v":1,"op":"respond","req":"a","response":"0011"}"#, .invalidField("response")),
            (#"{"v":1,"op":"respond","req":"a","response":"000102030405060708090A0B0C0D0E0F"}"#, .invalidField("response")),
            (#"{"v":1,"op":"respond","req":"a","response":"000102030405060708090a0b0c0d0e0g"}"#, .invalidField("response")),
            (#"{"v":1,"op":"respond","req":"a","response":1234}"#, .invalidField("response")),
        ] as [(String, ProtocolError)])
    func commandsAreDecodedStrictly(payload: String, expected: ProtocolError) {
        #expect(throws: expected) { try Command.decode(Array(payload.utf8)) }
    }

    @Test(
        arguments: [
            (#"{"v":1,"op":"result","req":"a","granted":"yes"}"#, ProtocolError.invalidField("granted")),
            (#"{"v":1,"op":"result","req":"a","granted":1}"#, .invalidField("granted")),
            (#"{"v":1,"op":"result","req":"a","granted":true,"reason":"expired"}"#, .invalidField("reason")),
            (#"{"v":1,"op":"result","req":"a","granted":false}"#, .invalidField("reason")),
            (#"{"v":1,"op":"result","req":"a","granted":false,"reason":"because"}"#, .invalidField("reason")),
            (#"{"v":1,"op":"activated","req":"a","wrappedKey":"000102030405060708090a0b0c0d0e0f","kcv":"0001"}"#, .invalidField("kcv")),
            (#"{"v":1,"op":"error","req":"a","reason":"tired"}"#, .invalidField("reason")),
            (#"{"v":1,"op":"state","state":"ajar"}"#, .invalidField("state")),
            (#"{"v":1,"op":"challenge","req":"a"}"#, .unknownOp("challenge")),
        ] as [(String, ProtocolError)])
    func eventsAreDecodedStrictly(payload: String, expected: ProtocolError) {
        #expect(throws: expected) { try Event.decode(Array(payload.utf8)) }
    }

    @Test("What a peer chose goes into an error's text escaped and cut short: no line breaks, escapes or quotes of its own")
    func errorTextEscapesThePeersText() throws {
        let op = #"{"v":1,"op":"x\n00:00 critical \u001b[2J\"\\é","req":"a"}"#
        let field = #"{"v":1,"op":"state","state":"locked","a\r\nb":1}"#
        let long = #"{"v":1,"op":"\#(String(repeating: "y", count: 100))","req":"a"}"#
        var texts: [String] = []
        for payload in [op, field, long] {
            do {
                _ = try Event.decode(Array(payload.utf8))
                Issue.record("decoded \(payload)")
            } catch {
                texts.append("\(error)")
            }
        }
        #expect(texts[0] == #"unknown op "x\u{A}00:00 critical \u{1B}[2J\u{22}\u{5C}\u{E9}""#)
        #expect(texts[1] == #"unexpected field "a\u{D}\u{A}b""#)
        #expect(texts[2] == #"unknown op "\#(String(repeating: "y", count: 32))""#)
    }

    @Test func oversizedPayloadsAreRefusedBeforeParsing() {
        let payload = Array(repeating: UInt8(ascii: " "), count: WireFormat.maximumPayloadSize + 1)
        #expect(throws: ProtocolError.payloadTooLarge(WireFormat.maximumPayloadSize + 1)) { try Command.decode(payload) }
    }

    @Test func statusFirmwareIsRestricted() {
        #expect(throws: ProtocolError.invalidField("firmware")) {
            try LockStatus.decode(Array(#"{"v":1,"op":"status","online":true,"firmware":"1.0\u0000"}"#.utf8))
        }
    }

    /// Random bytes and random mutations of valid messages never crash a decoder.
    @Test func randomInputNeverCrashes() {
        var generator = SystemRandomNumberGenerator()
        let seeds = [
            Command.respond(req: req, response: block).encoded(), Event.activated(req: req, wrappedKey: block, kcv: [1, 2, 3]).encoded(),
            LockStatus(online: true, activated: true, firmware: "1.0.0").encoded(),
        ]
        var decoded = 0
        for round in 0..<20_000 {
            var payload: [UInt8]
            if round % 2 == 0 {
                payload = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            } else {
                payload = seeds[round % seeds.count]
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let index = Int.random(in: 0..<payload.count, using: &generator)
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0: payload[index] = UInt8.random(in: 0...255, using: &generator)
                    case 1: payload.remove(at: index)
                    default: payload.insert(payload[index], at: index)
                    }
                }
            }
            if (try? Command.decode(payload)) != nil { decoded += 1 }
            if (try? Event.decode(payload)) != nil { decoded += 1 }
            if (try? LockStatus.decode(payload)) != nil { decoded += 1 }
        }
        // Some mutations stay valid (a changed hex digit); most must not.
        #expect(decoded < 20_000)
    }

    @Test func hexIsLowercaseAndStrict() {
        #expect(Hex.encode([0x00, 0xab, 0xff]) == "00abff")
        #expect(Hex.decode("00abff") == [0x00, 0xab, 0xff])
        #expect(Hex.decode("00ABFF") == nil)
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("") == [])
    }

    @Test func requestIDsAreRestricted() {
        #expect(RequestID("abc-DEF_123") != nil)
        #expect(RequestID(String(repeating: "a", count: 64)) != nil)
        #expect(RequestID(String(repeating: "a", count: 65)) == nil)
        #expect(RequestID("") == nil)
        #expect(RequestID("a\"b") == nil)
        #expect(RequestID("a b") == nil)
        #expect(RequestID.random() != RequestID.random())
    }
}
