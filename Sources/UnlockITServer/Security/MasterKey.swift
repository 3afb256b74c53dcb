import Crypto
import Foundation

/// The server's master key: 32 bytes that seal device keys at rest. It lives in a file only its owner
/// can read, or in the environment, and never in the database. The database keeps only a check value,
/// so a server started with the wrong key refuses to run instead of failing every unlock.
public struct MasterKey: Sendable {
    let key: SymmetricKey

    public enum MasterKeyError: Error, CustomStringConvertible {
        case badLength
        case unreadable(String)
        case exposed(String, mode: Int)
        case mismatch

        public var description: String {
            switch self {
            case .badLength: "the master key must be 32 bytes, written as 64 hex digits or base64"
            case .unreadable(let path): "cannot read the master key file \(path)"
            case .exposed(let path, let mode):
                "the master key file \(path) is readable by others (mode \(String(mode, radix: 8))); run: chmod 600 \(path)"
            case .mismatch: "the master key does not match this database (its check value differs); refusing to start"
            }
        }
    }

    public init(bytes: [UInt8]) throws(MasterKeyError) {
        guard bytes.count == 32 else { throw .badLength }
        key = SymmetricKey(data: bytes)
    }

    /// Parses 64 hex digits or base64 of 32 bytes.
    public init(text: String) throws(MasterKeyError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.utf8.count == 64, let bytes = Self.hex(trimmed) {
            try self.init(bytes: bytes)
        } else if let data = Data(base64Encoded: trimmed) {
            try self.init(bytes: Array(data))
        } else {
            throw .badLength
        }
    }

    /// Reads the key from `path`, refusing a file that group or others can read. A symbolic link is
    /// followed to its file (a secret mounted as a link to its file, as Kubernetes mounts them), and
    /// that file's mode is the one checked, which `chmod` on the link sets.
    public static func load(path: String) throws(MasterKeyError) -> MasterKey {
        let text: String
        do {
            text = try PrivateFile.read(path)
        } catch {
            switch error {
            case .unreadable: throw .unreadable(path)
            case .exposed(let mode): throw .exposed(path, mode: mode)
            }
        }
        return try MasterKey(text: text)
    }

    /// Creates a new random key in a new file with mode 0600 (never overwriting one).
    public static func create(path: String) throws -> MasterKey {
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let text = bytes.map { String(format: "%02x", $0) }.joined() + "\n"
        // On the disk before the database's check value is: a key lost to a power cut would leave a
        // database no key opens.
        do {
            try PrivateFile.create(path, text: text)
        } catch {
            throw MasterKeyError.unreadable(path)
        }
        return try MasterKey(bytes: bytes)
    }

    /// A value that identifies the key without revealing it: HMAC-SHA256(key, "unlockit master key check"), hex.
    public var checkValue: String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("unlockit master key check".utf8), using: key)
        return Data(mac).prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    private static func hex(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            guard let h = nibble(high), let l = nibble(low) else { return nil }
            bytes.append(h << 4 | l)
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
