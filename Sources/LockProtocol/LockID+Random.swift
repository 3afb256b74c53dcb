import UnlockITCore

extension LockID {
    /// A new random device id such as `lock-3f9a0c1b7d2e`, as a factory would print on the label.
    public static func random() -> LockID {
        LockID("lock-" + Hex.encode(SecureRandom.bytes(6)))!
    }
}
