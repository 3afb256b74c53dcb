/// A message from the server to a lock, on `unlockit/v1/locks/L/cmd`.
public enum Command: Sendable, Equatable {
    /// Pairing: asks the lock for its wrapped device key.
    case activate(req: RequestID)
    /// Asks the lock for a fresh nonce.
    case challenge(req: RequestID)
    /// Proves knowledge of the device key: `response = AES-ECB(K, nonce)`; opens the door.
    case respond(req: RequestID, response: Block128)
    /// Completes pairing: `response = AES-ECB(Kc, nonce)` with the confirmation key
    /// `Kc = AES-ECB(K, "unlockit-confirm")`, never `respond`'s proof (one could otherwise be turned
    /// into the other by rewriting `op`), sent right after `activate`, so that the lock marks itself
    /// activated only when the server has shown it holds the device key. Never opens.
    case confirm(req: RequestID, response: Block128)

    public var req: RequestID {
        switch self {
        case .activate(let req), .challenge(let req), .respond(let req, _), .confirm(let req, _): req
        }
    }

    public func encoded() -> [UInt8] {
        switch self {
        case .activate(let req):
            var writer = WireFormat.Writer(op: "activate")
            writer.add("req", req.rawValue)
            return writer.finish()
        case .challenge(let req):
            var writer = WireFormat.Writer(op: "challenge")
            writer.add("req", req.rawValue)
            return writer.finish()
        case .respond(let req, let response):
            var writer = WireFormat.Writer(op: "respond")
            writer.add("req", req.rawValue)
            writer.add("response", response.hex)
            return writer.finish()
        case .confirm(let req, let response):
            var writer = WireFormat.Writer(op: "confirm")
            writer.add("req", req.rawValue)
            writer.add("response", response.hex)
            return writer.finish()
        }
    }

    /// Decodes a command strictly; any deviation from protocol.md throws a ``ProtocolError``.
    public static func decode(_ payload: [UInt8]) throws(ProtocolError) -> Command {
        let fields = try WireFormat.fields(payload)
        switch fields.op {
        case "activate":
            try fields.expect(["req"])
            return .activate(req: try fields.requestID())
        case "challenge":
            try fields.expect(["req"])
            return .challenge(req: try fields.requestID())
        case "respond":
            try fields.expect(["req", "response"])
            return .respond(req: try fields.requestID(), response: try fields.block("response"))
        case "confirm":
            try fields.expect(["req", "response"])
            return .confirm(req: try fields.requestID(), response: try fields.block("response"))
        default:
            throw .unknownOp(fields.op)
        }
    }
}
