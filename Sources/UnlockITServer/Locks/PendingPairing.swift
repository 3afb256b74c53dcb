import LockProtocol
import UnlockITCore

/// The device key of a pairing whose `confirm` may have reached the lock, with the wrapped key the
/// lock sent for it. The server holds it from before the `confirm` until the activation is stored,
/// so that an attempt which lost the lock's answer can be finished by the next one (protocol.md,
/// "Activation").
public struct PendingPairing: Sendable {
    public let key: Key128
    public let wrappedKey: Block128

    public init(key: Key128, wrappedKey: Block128) {
        self.key = key
        self.wrappedKey = wrappedKey
    }

    /// Whether `setupCode` is the code this key was unwrapped with: it wraps the key into exactly the
    /// block the lock sent. Compared in constant time.
    public func matches(_ setupCode: SetupCode, lock: LockID) -> Bool {
        let rewrapped = KeyWrap.wrap(key, setupCode: setupCode, lock: lock).wrappedKey
        return ConstantTime.equals(rewrapped.bytes, wrappedKey.bytes)
    }
}
