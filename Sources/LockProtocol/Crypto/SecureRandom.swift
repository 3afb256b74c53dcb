import CLibCrypto

/// Bytes from OpenSSL's CSPRNG (`RAND_bytes`).
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        // RAND_bytes fails only when the system entropy source is broken: continuing would hand out guessable keys.
        precondition(ok == 1, "OpenSSL RAND_bytes failed: no entropy")
        return bytes
    }
}
