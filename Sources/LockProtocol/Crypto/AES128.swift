import CLibCrypto

/// AES-128 in ECB mode on single 16-byte blocks, through OpenSSL's EVP interface.
///
/// ECB is the only mode the lock's microcontroller offers. The protocol only ever
/// encrypts single, fresh, random blocks (nonces and keys), where ECB's weakness,
/// equal plaintext blocks giving equal ciphertext blocks, reveals nothing.
public enum AES128 {
    public static let blockSize = 16

    /// `AES-ECB(key, block)`.
    public static func encrypt(_ block: Block128, key: Key128) -> Block128 {
        Block128(unchecked: run(block.bytes, key: key.bytes, encrypt: true))
    }

    /// The inverse of ``encrypt(_:key:)``.
    public static func decrypt(_ block: Block128, key: Key128) -> Block128 {
        Block128(unchecked: run(block.bytes, key: key.bytes, encrypt: false))
    }

    /// The cipher, fetched from OpenSSL's default provider once. Passing `EVP_aes_128_ecb()` instead
    /// would make OpenSSL 3 look it up again on every call, which costs more than the encryption.
    /// `nonisolated(unsafe)`: an OpenSSL cipher object is immutable and safe to share between threads.
    nonisolated(unsafe) private static let cipher: OpaquePointer = {
        guard let cipher = EVP_CIPHER_fetch(nil, "AES-128-ECB", nil) else { fatalError("OpenSSL has no AES-128-ECB") }
        return cipher
    }()

    private static func run(_ input: [UInt8], key: [UInt8], encrypt: Bool) -> [UInt8] {
        guard let context = EVP_CIPHER_CTX_new() else { fatalError("OpenSSL: out of memory") }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: blockSize * 2)
        var written: Int32 = 0
        var final: Int32 = 0
        let ok = key.withUnsafeBufferPointer { keyBuffer in
            input.withUnsafeBufferPointer { inputBuffer in
                output.withUnsafeMutableBufferPointer { outputBuffer -> Bool in
                    guard
                        EVP_CipherInit_ex(context, cipher, nil, keyBuffer.baseAddress, nil, encrypt ? 1 : 0) == 1,
                        EVP_CIPHER_CTX_set_padding(context, 0) == 1,
                        EVP_CipherUpdate(context, outputBuffer.baseAddress, &written, inputBuffer.baseAddress, Int32(blockSize)) == 1,
                        EVP_CipherFinal_ex(context, outputBuffer.baseAddress! + Int(written), &final) == 1
                    else { return false }
                    return true
                }
            }
        }
        // With a 16-byte key and one whole block, OpenSSL cannot fail short of memory exhaustion.
        precondition(ok && written + final == Int32(blockSize), "OpenSSL AES-128-ECB failed")
        return Array(output.prefix(blockSize))
    }
}
