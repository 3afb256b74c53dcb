import UnlockITCore

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
        case .unknownOp(let op): "unknown op \"\(PeerText.printable(op))\""
        case .missingField(let field): "missing field \"\(field)\""
        case .invalidField(let field): "invalid field \"\(field)\""
        case .unexpectedField(let field): "unexpected field \"\(PeerText.printable(field))\""
        }
    }
}
