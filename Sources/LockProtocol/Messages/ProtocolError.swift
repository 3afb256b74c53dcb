/// Why a payload is not a valid protocol message. Decoding never crashes; it throws one of these.
public enum ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The payload is larger than ``WireFormat/maximumPayloadSize``.
    case payloadTooLarge(Int)
    /// Not a JSON object, or not UTF-8.
    case malformedJSON
    /// `v` is not 1.
    case unsupportedVersion(Int)
    /// `op` names no message of this direction.
    case unknownOp(String)
    /// A field the op requires is absent.
    case missingField(String)
    /// A field has the wrong type, hex length or value.
    case invalidField(String)
    /// A field this op does not have.
    case unexpectedField(String)

    public var description: String {
        switch self {
        case .payloadTooLarge(let size): "payload of \(size) bytes exceeds \(WireFormat.maximumPayloadSize)"
        case .malformedJSON: "payload is not a JSON object"
        case .unsupportedVersion(let v): "unsupported protocol version \(v)"
        case .unknownOp(let op): "unknown op \"\(Self.printable(op))\""
        case .missingField(let field): "missing field \"\(field)\""
        case .invalidField(let field): "invalid field \"\(field)\""
        case .unexpectedField(let field): "unexpected field \"\(Self.printable(field))\""
        }
    }

    /// Text a peer chose, as it may go into a log line: its first 32 code points, with everything but
    /// printable ASCII (line breaks, terminal escapes, quotes) written as `\u{…}`, so that a message
    /// cannot forge a line of its own or drive the operator's terminal.
    static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(32) {
            if (0x20...0x7E).contains(scalar.value) && scalar != "\"" && scalar != "\\" {
                out.unicodeScalars.append(scalar)
            } else {
                out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
        }
        return out
    }
}
