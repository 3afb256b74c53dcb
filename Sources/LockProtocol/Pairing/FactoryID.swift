import UnlockITCore

/// A device id the factory derives from the lock's setup code (docs/protocol.md, "Device ids"):
/// `lock-`, 12 hex digits of a random salt `S` (6 bytes), and 20 hex digits of
/// `HKDF-SHA256(IKM = the setup code's 10 bytes, salt = "unlockit/v1/device-id", info = S, L = 10)`.
///
/// The id can be printed outside the lock and the code kept inside. A guess at the code can be
/// tested against the id offline, so the code's 80 bits are what protect it, per lock: the salt
/// in each id keeps one guess from testing many ids at once. The server checks a code against the
/// id without the lock, so an id of this form is registered and activated only with its own setup
/// code, and whoever only read the id cannot take it. Any other id (`--id`, a fleet's) can be
/// checked against nothing.
public enum FactoryID {
    static let label = Array("unlockit/v1/device-id".utf8)
    public static let saltCount = LockID.factorySaltDigits / 2
    static let tagCount = LockID.factoryTagDigits / 2

    /// The id of a new lock whose label carries `setupCode`, with a fresh random salt (or `salt`,
    /// for a test vector).
    public static func of(_ setupCode: SetupCode, salt: [UInt8] = SecureRandom.bytes(saltCount)) -> LockID {
        precondition(salt.count == saltCount, "a factory id's salt is \(saltCount) bytes")
        return LockID(LockID.factoryPrefix + Hex.encode(salt) + Hex.encode(tag(setupCode, salt: salt)))!
    }

    /// Whether `setupCode` is the one the factory id `id` was derived from.
    public static func matches(_ id: LockID, _ setupCode: SetupCode) -> Bool {
        guard id.hasFactoryForm, let digits = Hex.decode(String(id.rawValue.dropFirst(LockID.factoryPrefix.count))) else { return false }
        let salt = Array(digits.prefix(saltCount))
        return ConstantTime.equals(tag(setupCode, salt: salt), Array(digits.dropFirst(saltCount)))
    }

    private static func tag(_ setupCode: SetupCode, salt: [UInt8]) -> [UInt8] {
        HKDFSHA256.derive(inputKey: setupCode.bytes, salt: label, info: salt, length: tagCount)
    }
}
