import Foundation
import LockProtocol
import Testing
import UnlockITCore

/// docs/protocol.md's worked example is computed by an independent implementation; the code must
/// reproduce every value and every message in it, byte for byte.
@Suite struct ProtocolDocumentTests {
    static let document: String = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/protocol.md")
        return (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    }()

    /// The lines of the fenced block whose info string is `kind`.
    static func block(_ kind: String) -> [String] {
        let lines = document.components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: "```\(kind)") else { return [] }
        return Array(lines[(start + 1)...].prefix { $0 != "```" })
    }

    static var vectors: [String: String] {
        var vectors: [String: String] = [:]
        for line in block("vectors") {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 { vectors[parts[0]] = parts[1] }
        }
        return vectors
    }

    func hex(_ name: String) throws -> [UInt8] {
        let text = try #require(Self.vectors[name], "missing vector \(name)")
        return try #require(Hex.decode(text))
    }

    @Test func documentHasTheExample() {
        #expect(Self.vectors.count == 14)
        #expect(Self.block("wire").count == 16)
    }

    @Test func fips197Vector() throws {
        let key = try #require(Key128(try hex("fips197.key")))
        let plain = try #require(Block128(try hex("fips197.plaintext")))
        #expect(AES128.encrypt(plain, key: key).bytes == (try hex("fips197.ciphertext")))
        #expect(AES128.decrypt(AES128.encrypt(plain, key: key), key: key) == plain)
    }

    @Test func pairingValues() throws {
        let lockText = try #require(Self.vectors["lockId"])
        let codeText = try #require(Self.vectors["setupCode"])
        let lock = try #require(LockID(lockText))
        let code = try #require(SetupCode(codeText))
        #expect(code.bytes == (try hex("setupCodeBytes")))
        #expect(code.formatted == Self.vectors["setupCode"])
        #expect(KeyWrap.wrappingKey(setupCode: code, lock: lock).bytes == (try hex("wrappingKey")))

        let key = try #require(Key128(try hex("deviceKey")))
        let (wrapped, kcv) = KeyWrap.wrap(key, setupCode: code, lock: lock)
        #expect(wrapped.bytes == (try hex("wrappedKey")))
        #expect(kcv == (try hex("kcv")))
        let unwrapped = try #require(KeyWrap.unwrap(wrapped, kcv: kcv, setupCode: code, lock: lock))
        #expect(unwrapped.constantTimeEquals(key))
    }

    @Test func challengeResponseValue() throws {
        let key = try #require(Key128(try hex("deviceKey")))
        let nonce = try #require(Block128(try hex("nonce")))
        #expect(ChallengeResponse.compute(nonce: nonce, key: key).bytes == (try hex("response")))
        #expect(ChallengeResponse.confirmationKey(key).bytes == (try hex("confirmKey")))
        #expect(ChallengeResponse.confirmation(nonce: nonce, key: key).bytes == (try hex("confirmation")))
    }

    /// Every example message decodes, and encoding the decoded value gives back the same bytes.
    @Test func wireExamplesRoundTripByteForByte() throws {
        for line in Self.block("wire") {
            let parts = line.split(separator: " ", maxSplits: 1)
            let payload = Array(parts[1].utf8)
            switch parts[0] {
            case "cmd": #expect(try Command.decode(payload).encoded() == payload, "\(line)")
            case "evt": #expect(try Event.decode(payload).encoded() == payload, "\(line)")
            case "status": #expect(try LockStatus.decode(payload).encoded() == payload, "\(line)")
            default: Issue.record("unknown direction in \(line)")
            }
        }
    }

    @Test func wireExamplesCarryTheComputedValues() throws {
        let wire = Self.block("wire")
        let activated = try Event.decode(Array(wire[1].dropFirst(4).utf8))
        #expect(activated == .activated(req: RequestID("pair-1")!, wrappedKey: Block128(try hex("wrappedKey"))!, kcv: try hex("kcv")))
        let confirm = try Command.decode(Array(wire[4].dropFirst(4).utf8))
        #expect(confirm == .confirm(req: RequestID("pair-2")!, response: Block128(try hex("confirmation"))!))
        let respond = try Command.decode(Array(wire[8].dropFirst(4).utf8))
        #expect(respond == .respond(req: RequestID("a1b2c3d4e5f60718")!, response: Block128(try hex("response"))!))
    }
}
