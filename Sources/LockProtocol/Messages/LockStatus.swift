/// The retained message on `unlockit/v1/locks/L/status`.
///
/// The lock publishes `{"v":1,"op":"status","online":true,"activated":…,"firmware":…}` when it
/// connects, and registers `{"v":1,"op":"status","online":false}` as its MQTT last will.
public struct LockStatus: Sendable, Equatable {
    public var online: Bool
    public var activated: Bool?
    public var firmware: String?

    public init(online: Bool, activated: Bool? = nil, firmware: String? = nil) {
        self.online = online
        self.activated = activated
        self.firmware = firmware
    }

    /// Firmware versions are short dotted version strings such as `1.4.2`.
    static func isValidFirmware(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count)
            && text.utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: ".") }
    }

    public func encoded() -> [UInt8] {
        var writer = WireFormat.Writer(op: "status")
        writer.add("online", online)
        if let activated { writer.add("activated", activated) }
        if let firmware { writer.add("firmware", firmware) }
        return writer.finish()
    }

    public static func decode(_ payload: [UInt8]) throws(ProtocolError) -> LockStatus {
        let fields = try WireFormat.fields(payload)
        guard fields.op == "status" else { throw .unknownOp(fields.op) }
        try fields.expect(["online"], optional: ["activated", "firmware"])
        let firmware = fields.string("firmware")
        if let firmware, !isValidFirmware(firmware) { throw .invalidField("firmware") }
        return LockStatus(online: fields.bool("online")!, activated: fields.bool("activated"), firmware: firmware)
    }
}
