/// A message from a lock to the server, on `unlockit/v1/locks/L/evt`.
public enum Event: Sendable, Equatable {
    /// Pairing answer: the device key wrapped under the setup-code key, and its check value.
    case activated(req: RequestID, wrappedKey: Block128, kcv: [UInt8])
    /// The challenge: a fresh 16-byte nonce.
    case nonce(req: RequestID, nonce: Block128)
    /// The outcome of a `respond`.
    case result(req: RequestID, granted: Bool, reason: DenialReason?)
    /// The lock refused an `activate` or a `challenge`.
    case error(req: RequestID, reason: LockErrorReason)
    /// The relay moved.
    case state(RelayState)

    /// The request this event answers; `nil` for unsolicited `state` events.
    public var req: RequestID? {
        switch self {
        case .activated(let req, _, _), .nonce(let req, _), .result(let req, _, _), .error(let req, _): req
        case .state: nil
        }
    }

    public func encoded() -> [UInt8] {
        switch self {
        case .activated(let req, let wrappedKey, let kcv):
            var writer = WireFormat.Writer(op: "activated")
            writer.add("req", req.rawValue)
            writer.add("wrappedKey", wrappedKey.hex)
            writer.add("kcv", Hex.encode(kcv))
            return writer.finish()
        case .nonce(let req, let nonce):
            var writer = WireFormat.Writer(op: "nonce")
            writer.add("req", req.rawValue)
            writer.add("nonce", nonce.hex)
            return writer.finish()
        case .result(let req, let granted, let reason):
            var writer = WireFormat.Writer(op: "result")
            writer.add("req", req.rawValue)
            writer.add("granted", granted)
            if let reason { writer.add("reason", reason.rawValue) }
            return writer.finish()
        case .error(let req, let reason):
            var writer = WireFormat.Writer(op: "error")
            writer.add("req", req.rawValue)
            writer.add("reason", reason.rawValue)
            return writer.finish()
        case .state(let state):
            var writer = WireFormat.Writer(op: "state")
            writer.add("state", state.rawValue)
            return writer.finish()
        }
    }

    /// Decodes an event strictly; any deviation from protocol.md throws a ``ProtocolError``.
    public static func decode(_ payload: [UInt8]) throws(ProtocolError) -> Event {
        let fields = try WireFormat.fields(payload)
        switch fields.op {
        case "activated":
            try fields.expect(["req", "wrappedKey", "kcv"])
            return .activated(
                req: try fields.requestID(), wrappedKey: try fields.block("wrappedKey"),
                kcv: try fields.hex("kcv", count: KeyCheckValue.length))
        case "nonce":
            try fields.expect(["req", "nonce"])
            return .nonce(req: try fields.requestID(), nonce: try fields.block("nonce"))
        case "result":
            try fields.expect(["req", "granted"], optional: ["reason"])
            let granted = fields.bool("granted")!
            let reason = fields.has("reason") ? try fields.value("reason", as: DenialReason.self) : nil
            // A grant never carries a reason and a denial always does.
            guard granted == (reason == nil) else { throw .invalidField("reason") }
            return .result(req: try fields.requestID(), granted: granted, reason: reason)
        case "error":
            try fields.expect(["req", "reason"])
            return .error(req: try fields.requestID(), reason: try fields.value("reason", as: LockErrorReason.self))
        case "state":
            try fields.expect(["state"])
            return .state(try fields.value("state", as: RelayState.self))
        default:
            throw .unknownOp(fields.op)
        }
    }
}
