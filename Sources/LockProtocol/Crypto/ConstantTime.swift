import CLibCrypto

/// Comparison whose running time does not depend on where two byte strings differ.
public enum ConstantTime {
    /// True iff `a` and `b` are equal. Lengths are not secret; contents are compared with `CRYPTO_memcmp`.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { ap in
            b.withUnsafeBytes { bp in CRYPTO_memcmp(ap.baseAddress, bp.baseAddress, a.count) == 0 }
        }
    }
}
