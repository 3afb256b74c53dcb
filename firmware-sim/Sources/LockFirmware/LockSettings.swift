/// How a simulated lock behaves; the defaults are those of protocol.md.
public struct LockSettings: Sendable {
    /// How long the relay stays open after a granted unlock.
    public var openDuration: Duration = .seconds(3)
    /// How long a challenge may wait for its `respond`.
    public var challengeLifetime: Duration = .seconds(5)
    /// How long pairing mode lasts once entered (the button held on a real lock).
    public var pairingWindow: Duration = .seconds(300)
    /// How long a flash write takes. A real lock's flash may be slow (or its controller busy); the
    /// lock's MQTT loop waits meanwhile, as a microcontroller's single thread would.
    public var flashWriteTime: Duration = .zero

    public init(
        openDuration: Duration = .seconds(3), challengeLifetime: Duration = .seconds(5), pairingWindow: Duration = .seconds(300),
        flashWriteTime: Duration = .zero
    ) {
        self.openDuration = openDuration
        self.challengeLifetime = challengeLifetime
        self.pairingWindow = pairingWindow
        self.flashWriteTime = flashWriteTime
    }
}
