import CLibCrypto

/// HKDF with SHA-256 (RFC 5869), through OpenSSL's `EVP_PKEY_HKDF`.
public enum HKDFSHA256 {
    /// Derives `length` bytes (at most 255 × 32) from input keying material, a salt and context info.
    public static func derive(inputKey: [UInt8], salt: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
        precondition(length > 0 && length <= 255 * 32, "HKDF output length out of range")
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else { fatalError("OpenSSL: out of memory") }
        defer { EVP_PKEY_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: length)
        var outputLength = length
        let ok = inputKey.withUnsafeBufferPointer { key in
            salt.withUnsafeBufferPointer { salt in
                info.withUnsafeBufferPointer { info in
                    output.withUnsafeMutableBufferPointer { out -> Bool in
                        EVP_PKEY_derive_init(context) == 1
                            && EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256()) == 1
                            && EVP_PKEY_CTX_set1_hkdf_salt(context, salt.baseAddress, Int32(salt.count)) == 1
                            && EVP_PKEY_CTX_set1_hkdf_key(context, key.baseAddress, Int32(key.count)) == 1
                            && EVP_PKEY_CTX_add1_hkdf_info(context, info.baseAddress, Int32(info.count)) == 1
                            && EVP_PKEY_derive(context, out.baseAddress, &outputLength) == 1
                    }
                }
            }
        }
        precondition(ok && outputLength == length, "OpenSSL HKDF failed")
        return output
    }
}
