import UnlockITCore

/// The `req` that correlates a server request with the lock's answer.
///
/// 1 to 64 characters of letters, digits, `-` and `_` (base64url's alphabet): it is echoed back verbatim,
/// so the alphabet is kept small enough never to need escaping.
public struct RequestID: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init?(_ rawValue: String) {
        // On the string's bytes in one buffer: through `utf8`'s iterator this check cost ≈ 1,100
        // instructions under callgrind (≈ 350 now), and every `nonce` and `result` the server reads has one.
        var text = rawValue
        guard text.withUTF8({ bytes in (1...64).contains(bytes.count) && bytes.allSatisfy(Base64URL.isAlphabet) }) else { return nil }
        self.rawValue = rawValue
    }

    /// 64 random bits as 16 hex digits: unique among the requests in flight.
    public static func random() -> RequestID { RequestID(Hex.encode(SecureRandom.bytes(8)))! }

    public var description: String { rawValue }
}
