/// How a simulated lock behaves; the defaults are those of protocol.md.
public struct LockSettings: Sendable {
    /// How long the relay stays open after a granted unlock.
    public var openDuration: Duration = .seconds(3)
    /// How long a challenge may wait for its `respond`.
    public var challengeLifetime: Duration = .seconds(5)
    /// How long pairing mode lasts once entered (the button held on a real lock).
    public var pairingWindow: Duration = .seconds(300)

    public init(openDuration: Duration = .seconds(3), challengeLifetime: Duration = .seconds(5), pairingWindow: Duration = .seconds(300)) {
        self.openDuration = openDuration
        self.challengeLifetime = challengeLifetime
        self.pairingWindow = pairingWindow
    }
}
