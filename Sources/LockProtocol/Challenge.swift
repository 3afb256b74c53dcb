/// The proofs of holding the device key `K` that answer a lock's nonce `N`.
///
/// A `respond` and a `confirm` carry different proofs, so that neither can be turned into the other:
/// a `confirm` is sent when pairing ends, also to a lock that is already activated (a pairing the
/// server finishes after losing the lock's answer), and were its proof a `respond`'s, anyone able to
/// rewrite that one message's `op` would open the door with it.
public enum ChallengeResponse {
    /// The 16 bytes the confirmation key is derived from: ASCII `unlockit-confirm`.
    public static let confirmationLabel = Block128(unchecked: Array("unlockit-confirm".utf8))

    /// The proof a `respond` carries: `AES-ECB(K, N)`.
    public static func compute(nonce: Block128, key: Key128) -> Block128 {
        AES128.encrypt(nonce, key: key)
    }

    /// The proof a `confirm` carries: `AES-ECB(Kc, N)` with `Kc = AES-ECB(K, "unlockit-confirm")`.
    ///
    /// A key of its own, not `N` changed by a constant: the server proves possession to whatever
    /// nonce it is sent, so a proof `AES-ECB(K, N ⊕ C)` would be a `respond`'s for a nonce `N ⊕ C`
    /// chosen by whoever sent it. Answers under `Kc` say nothing of answers under `K`.
    public static func confirmation(nonce: Block128, key: Key128) -> Block128 {
        AES128.encrypt(nonce, key: confirmationKey(key))
    }

    /// `Kc`, the key of ``confirmation(nonce:key:)``.
    public static func confirmationKey(_ key: Key128) -> Key128 {
        Key128(unchecked: AES128.encrypt(confirmationLabel, key: key).bytes)
    }
}
