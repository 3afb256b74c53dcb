import Crypto
import Foundation
import LockProtocol
import Testing
import UnlockITCore

@Suite struct CryptoTests {
    /// RFC 5869, test case 1.
    @Test func hkdfMatchesRFC5869() {
        let ikm = [UInt8](repeating: 0x0b, count: 22)
        let salt = Hex.decode("000102030405060708090a0b0c")!
        let info = Hex.decode("f0f1f2f3f4f5f6f7f8f9")!
        let okm = HKDFSHA256.derive(inputKey: ikm, salt: salt, info: info, length: 42)
        #expect(Hex.encode(okm) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }

    /// OpenSSL's HKDF agrees with swift-crypto's on random inputs.
    @Test func hkdfAgreesWithSwiftCrypto() {
        for _ in 0..<200 {
            let ikm = SecureRandom.bytes(Int.random(in: 1...64))
            let salt = SecureRandom.bytes(Int.random(in: 1...32))
            let info = SecureRandom.bytes(Int.random(in: 0...32))
            let ours = HKDFSHA256.derive(inputKey: ikm, salt: salt, info: info, length: 16)
            let theirs = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: ikm), salt: salt, info: info, outputByteCount: 16)
            #expect(ours == theirs.withUnsafeBytes { Array($0) })
        }
    }

    @Test func aesDecryptInvertsEncrypt() {
        for _ in 0..<100 {
            let key = Key128.random()
            let block = Block128.random()
            #expect(AES128.decrypt(AES128.encrypt(block, key: key), key: key) == block)
        }
    }

    @Test func constantTimeEquality() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
        #expect(ConstantTime.equals([], []))
    }

    @Test func randomValuesDiffer() {
        #expect(Block128.random() != Block128.random())
        #expect(SecureRandom.bytes(32) != SecureRandom.bytes(32))
        #expect(Set((0..<100).map { _ in SetupCode.random().formatted }).count == 100)
    }

    @Test func secretsDoNotPrint() {
        #expect("\(Key128.random())" == "Key128(redacted)")
        let code = SetupCode.random()
        #expect("\(code)" == "SetupCode(redacted)" && String(reflecting: code) == "SetupCode(redacted)")
        #expect(!"\(code)".contains(code.formatted))
    }
}
