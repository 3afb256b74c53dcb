/// The proof a `respond` carries: `AES-ECB(K, N)` for the lock's nonce `N`.
public enum ChallengeResponse {
    public static func compute(nonce: Block128, key: Key128) -> Block128 {
        AES128.encrypt(nonce, key: key)
    }
}
