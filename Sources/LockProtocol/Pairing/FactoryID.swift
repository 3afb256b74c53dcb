import UnlockITCore

/// A device id the factory derives from the lock's setup code (docs/protocol.md, "Device ids"):
/// `lock-` and 20 lowercase hex digits of `HKDF-SHA256(IKM = the setup code's 10 bytes,
/// salt = "unlockit/v1/device-id", info = "", L = 10)`.
///
/// The id can be printed outside the lock and the code kept inside: the id gives the code away no
/// more than a captured activation does (80 bits), and the server can check a code against the id
/// without the lock. So an id of this form is registered and activated only with its own setup
/// code, and whoever only read the id cannot take it. Any other id (`--id`, a fleet's) can be
/// checked against nothing.
public enum FactoryID {
    static let salt = Array("unlockit/v1/device-id".utf8)
    static let byteCount = LockID.factoryDigits / 2

    /// The id of the lock whose label carries `setupCode`.
    public static func of(_ setupCode: SetupCode) -> LockID {
        LockID(LockID.factoryPrefix + Hex.encode(digest(setupCode)))!
    }

    /// Whether `setupCode` is the one the factory id `id` was derived from (in constant time).
    public static func matches(_ id: LockID, _ setupCode: SetupCode) -> Bool {
        guard id.hasFactoryForm, let expected = Hex.decode(String(id.rawValue.dropFirst(LockID.factoryPrefix.count))) else { return false }
        return ConstantTime.equals(digest(setupCode), expected)
    }

    private static func digest(_ setupCode: SetupCode) -> [UInt8] {
        HKDFSHA256.derive(inputKey: setupCode.bytes, salt: salt, info: [], length: byteCount)
    }
}
