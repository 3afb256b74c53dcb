/// The JSON envelope every message shares, and the strict field reader behind the decoders.
public enum WireFormat {
    /// The only protocol version.
    public static let version = 1
    /// Payloads above this size are refused before any parsing (protocol.md: "oversized messages are dropped").
    public static let maximumPayloadSize = 4096

    /// Reads a payload into typed fields, checking size, JSON shape, field names and types, `v` and `op`.
    static func fields(_ payload: [UInt8]) throws(ProtocolError) -> Fields {
        guard payload.count <= maximumPayloadSize else { throw .payloadTooLarge(payload.count) }
        let members: [(key: String, value: FlatJSON.Value)]
        do {
            members = try FlatJSON.parse(payload)
        } catch {
            throw .malformedJSON
        }
        var fields = Fields()
        fields.members.reserveCapacity(members.count)
        for (key, value) in members {
            // The type of each field is fixed by its name, so a string "1" is never read as a number.
            guard let type = Fields.type(of: key) else { throw .unexpectedField(key) }
            // A repeated field would be read differently by different parsers: refused.
            guard !fields.has(key) else { throw .invalidField(key) }
            switch (type, value) {
            case (.string, .string), (.int, .integer), (.bool, .bool): fields.members.append((key, value))
            default: throw .invalidField(key)
            }
        }
        guard let version = fields.int("v") else { throw fields.has("v") ? .invalidField("v") : .missingField("v") }
        guard version == Self.version else { throw .unsupportedVersion(version) }
        guard fields.string("op") != nil else { throw fields.has("op") ? .invalidField("op") : .missingField("op") }
        return fields
    }

    /// A flat JSON object read field by field: strings, integers and booleans only.
    ///
    /// The members stay in a small array, searched in order: a message has at most five, and a
    /// dictionary per type (hashing every name) cost more than the rest of the decoding.
    struct Fields {
        /// In document order; each value is of the type its name fixes (checked by ``fields(_:)``).
        fileprivate(set) var members: [(key: String, value: FlatJSON.Value)] = []

        enum FieldType { case string, int, bool }

        static func type(of name: String) -> FieldType? {
            switch name {
            case "v": .int
            case "op", "req", "response", "nonce", "wrappedKey", "kcv", "reason", "state", "firmware": .string
            case "granted", "online", "activated": .bool
            default: nil
            }
        }

        func has(_ key: String) -> Bool { members.contains { $0.key == key } }
        var op: String { string("op") ?? "" }

        private func value(of key: String) -> FlatJSON.Value? { members.first { $0.key == key }?.value }

        func string(_ key: String) -> String? {
            guard case .string(let text)? = value(of: key) else { return nil }
            return text
        }

        func int(_ key: String) -> Int? {
            guard case .integer(let number)? = value(of: key) else { return nil }
            return number
        }

        func bool(_ key: String) -> Bool? {
            guard case .bool(let flag)? = value(of: key) else { return nil }
            return flag
        }

        /// Throws unless the payload holds exactly the envelope, `required` and some of `optional`.
        func expect(_ required: [String], optional: [String] = []) throws(ProtocolError) {
            for key in required where !has(key) { throw .missingField(key) }
            let isAllowed = { (key: String) in key == "v" || key == "op" || required.contains(key) || optional.contains(key) }
            if let extra = members.first(where: { !isAllowed($0.key) }) { throw .unexpectedField(extra.key) }
        }

        func requestID() throws(ProtocolError) -> RequestID {
            guard let text = string("req") else { throw .missingField("req") }
            guard let id = RequestID(text) else { throw .invalidField("req") }
            return id
        }

        func block(_ key: String) throws(ProtocolError) -> Block128 {
            guard let text = string(key) else { throw .missingField(key) }
            guard let bytes = Hex.decode(text), let block = Block128(bytes) else { throw .invalidField(key) }
            return block
        }

        func hex(_ key: String, count: Int) throws(ProtocolError) -> [UInt8] {
            guard let text = string(key) else { throw .missingField(key) }
            guard let bytes = Hex.decode(text), bytes.count == count else { throw .invalidField(key) }
            return bytes
        }

        func value<T: RawRepresentable>(_ key: String, as: T.Type) throws(ProtocolError) -> T where T.RawValue == String {
            guard let text = string(key) else { throw .missingField(key) }
            guard let value = T(rawValue: text) else { throw .invalidField(key) }
            return value
        }
    }

    /// Builds `{"v":1,"op":…,…}` straight into bytes. Values are escaped, although every value the
    /// protocol sends comes from a restricted alphabet (hex, request ids, reason codes).
    struct Writer {
        private var bytes: [UInt8] = []

        /// What every message starts with, made once rather than interpolated for each.
        private static let envelope = Array("{\"v\":\(WireFormat.version),\"op\":".utf8)

        init(op: String) {
            bytes.reserveCapacity(128)
            bytes.append(contentsOf: Self.envelope)
            Self.appendQuoted(op, to: &bytes)
        }

        mutating func add(_ key: String, _ value: String) {
            appendKey(key)
            Self.appendQuoted(value, to: &bytes)
        }

        mutating func add(_ key: String, _ value: Bool) {
            appendKey(key)
            Self.append(value ? "true" : "false", to: &bytes)
        }

        mutating func finish() -> [UInt8] {
            bytes.append(UInt8(ascii: "}"))
            return bytes
        }

        private mutating func appendKey(_ key: String) {
            bytes.append(UInt8(ascii: ","))
            Self.appendQuoted(key, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
        }

        private static func append(_ text: String, to bytes: inout [UInt8]) {
            bytes.append(contentsOf: text.utf8)
        }

        private static func appendQuoted(_ value: String, to bytes: inout [UInt8]) {
            let hexDigits: StaticString = "0123456789abcdef"
            bytes.append(UInt8(ascii: "\""))
            // Nearly always nothing to escape (hex, request ids, reason codes): then one copy, not a
            // check of capacity and uniqueness per byte. (A native string's bytes are contiguous; going
            // through `utf8`'s iterator instead costs several times more.)
            let plain = value.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
                for byte in utf8 where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
                bytes.append(contentsOf: utf8)
                return true
            }
            if plain == true {
                bytes.append(UInt8(ascii: "\""))
                return
            }
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(byte)
                case 0x00..<0x20:
                    bytes.append(contentsOf: Array("\\u00".utf8))
                    bytes.append(hexDigits.utf8Start[Int(byte >> 4)])
                    bytes.append(hexDigits.utf8Start[Int(byte & 0xf)])
                default:
                    // UTF-8 passes through unchanged: JSON text is UTF-8.
                    bytes.append(byte)
                }
            }
            bytes.append(UInt8(ascii: "\""))
        }
    }
}
