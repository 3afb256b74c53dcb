import UnlockITCore

/// Wrapping the device key for activation (docs/protocol.md, "Activate").
///
/// `Ks = HKDF-SHA256(IKM = the setup code's 10 bytes, salt = "unlockit/v1/pairing", info = "wrap-key:" ‖ lock id, L = 16)`,
/// `wrappedKey = AES-ECB(Ks, K)`, `kcv = AES-ECB(K, 0¹²⁸)[0..<3]`.
public enum KeyWrap {
    public static let salt = Array("unlockit/v1/pairing".utf8)

    /// The wrapping key both sides derive from the setup code, bound to one lock id.
    public static func wrappingKey(setupCode: SetupCode, lock: LockID) -> Key128 {
        let info = Array("wrap-key:".utf8) + Array(lock.rawValue.utf8)
        return Key128(unchecked: HKDFSHA256.derive(inputKey: setupCode.bytes, salt: salt, info: info, length: 16))
    }

    /// The lock's side: the device key wrapped for the server, with its check value.
    public static func wrap(_ deviceKey: Key128, setupCode: SetupCode, lock: LockID) -> (wrappedKey: Block128, kcv: [UInt8]) {
        let wrapping = wrappingKey(setupCode: setupCode, lock: lock)
        let wrapped = AES128.encrypt(Block128(unchecked: deviceKey.bytes), key: wrapping)
        return (wrapped, KeyCheckValue.of(deviceKey))
    }

    /// The server's side: unwraps with the admin-supplied setup code; `nil` when the check value
    /// disagrees, which is what a wrong setup code gives.
    public static func unwrap(_ wrappedKey: Block128, kcv: [UInt8], setupCode: SetupCode, lock: LockID) -> Key128? {
        let wrapping = wrappingKey(setupCode: setupCode, lock: lock)
        let candidate = Key128(unchecked: AES128.decrypt(wrappedKey, key: wrapping).bytes)
        guard ConstantTime.equals(KeyCheckValue.of(candidate), kcv) else { return nil }
        return candidate
    }
}
