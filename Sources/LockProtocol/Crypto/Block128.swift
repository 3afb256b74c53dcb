/// Exactly sixteen bytes: an AES block (a nonce, a response, a wrapped key).
public struct Block128: Sendable, Hashable {
    public let bytes: [UInt8]

    /// Fails unless `bytes` holds exactly 16 bytes.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count == AES128.blockSize else { return nil }
        self.bytes = bytes
    }

    init(unchecked bytes: [UInt8]) {
        precondition(bytes.count == AES128.blockSize)
        self.bytes = bytes
    }

    public static let zero = Block128(unchecked: [UInt8](repeating: 0, count: AES128.blockSize))

    /// Sixteen bytes from the CSPRNG.
    public static func random() -> Block128 {
        Block128(unchecked: SecureRandom.bytes(AES128.blockSize))
    }

    /// Constant-time equality, by name where the value is a secret or a proof.
    public func constantTimeEquals(_ other: Block128) -> Bool {
        ConstantTime.equals(bytes, other.bytes)
    }

    /// Constant time too: a nonce or a proof compared with `==` (and so every `Command` and `Event`
    /// that holds one) tells nothing by how long the comparison takes.
    public static func == (lhs: Block128, rhs: Block128) -> Bool { lhs.constantTimeEquals(rhs) }

    public var hex: String { Hex.encode(bytes) }
}
