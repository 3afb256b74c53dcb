/// The code on a lock's label that proves the admin holds the device: 80 random bits as
/// 16 Crockford base32 characters in four groups, e.g. `7KQ2-M9XD-4RTA-WZ3C`.
///
/// Anyone who captures an `activated` message can test guesses offline against the KCV, so the
/// code must be long enough that guessing is hopeless: 2⁸⁰ candidates.
public struct SetupCode: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The ten bytes (80 bits) the code encodes.
    public let bytes: [UInt8]

    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    public static let byteCount = 10
    public static let characterCount = 16

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// Parses what a person types: case-insensitive, hyphens and spaces ignored, and the
    /// look-alikes Crockford allows (`O` for 0, `I` and `L` for 1). `nil` for anything else.
    public init?(_ text: String) {
        var values: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"), UInt8(ascii: " "): continue
            default:
                guard let value = Self.value(of: byte) else { return nil }
                values.append(value)
            }
            if values.count > Self.characterCount { return nil }
        }
        guard values.count == Self.characterCount else { return nil }
        // 16 five-bit values → 80 bits → 10 bytes, most significant bit first.
        var bytes: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for value in values {
            accumulator = accumulator << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        self.bytes = bytes
    }

    /// A fresh code from the CSPRNG, as a factory would print on the label.
    public static func random() -> SetupCode { SetupCode(bytes: SecureRandom.bytes(byteCount))! }

    /// The canonical form, `XXXX-XXXX-XXXX-XXXX`.
    public var formatted: String {
        var characters: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                characters.append(Self.alphabet[Int((accumulator >> UInt32(bits)) & 0x1f)])
            }
        }
        var grouped: [UInt8] = []
        for (index, character) in characters.enumerated() {
            if index > 0 && index % 4 == 0 { grouped.append(UInt8(ascii: "-")) }
            grouped.append(character)
        }
        return String(decoding: grouped, as: UTF8.self)
    }

    private static func value(of byte: UInt8) -> UInt8? {
        var upper = byte
        if (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) { upper = byte - 32 }
        switch upper {
        case UInt8(ascii: "O"): return 0
        case UInt8(ascii: "I"), UInt8(ascii: "L"): return 1
        default: return alphabet.firstIndex(of: upper).map { UInt8($0) }
        }
    }

    /// Redacted: a setup code is a secret until the lock is activated, and never belongs in a log.
    public var description: String { "SetupCode(redacted)" }
    public var debugDescription: String { description }
}
