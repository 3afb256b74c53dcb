import Crypto
import LockProtocol
import UnlockITCore

/// Seals device keys for storage: AES-256-GCM under the master key, with the lock id as associated
/// data, so a sealed key copied onto another lock's row does not open.
public struct KeySealer: Sendable {
    let masterKey: MasterKey

    public init(masterKey: MasterKey) { self.masterKey = masterKey }

    public func seal(_ key: Key128, for lock: LockID) throws -> [UInt8] {
        let box = try AES.GCM.seal(key.bytes, using: masterKey.key, authenticating: Array(lock.rawValue.utf8))
        guard let combined = box.combined else { throw SealError.sealFailed }
        return Array(combined)
    }

    public func open(_ sealed: [UInt8], for lock: LockID) throws -> Key128 {
        let box = try AES.GCM.SealedBox(combined: sealed)
        let bytes = try AES.GCM.open(box, using: masterKey.key, authenticating: Array(lock.rawValue.utf8))
        guard let key = Key128(Array(bytes)) else { throw SealError.corrupt }
        return key
    }

    public enum SealError: Error { case sealFailed, corrupt }
}
