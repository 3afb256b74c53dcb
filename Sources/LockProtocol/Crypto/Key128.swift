/// An AES-128 key. Its description never shows the key, so it cannot leak into logs by accident.
public struct Key128: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public let bytes: [UInt8]

    /// Fails unless `bytes` holds exactly 16 bytes.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    init(unchecked bytes: [UInt8]) {
        precondition(bytes.count == 16)
        self.bytes = bytes
    }

    /// A fresh key from the CSPRNG.
    public static func random() -> Key128 { Key128(unchecked: SecureRandom.bytes(16)) }

    /// Constant-time comparison of two keys.
    public func constantTimeEquals(_ other: Key128) -> Bool { ConstantTime.equals(bytes, other.bytes) }

    public var description: String { "Key128(redacted)" }
    public var debugDescription: String { description }
}
