import Testing

@testable import UnlockITServer

@Suite struct ServerConfigurationTests {
    @Test(arguments: ["0.5", "3", "5"])
    func anUnlockTimeoutWithinTheLocksChallengeLifeIsTaken(seconds: String) throws {
        let configuration = try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_UNLOCK_TIMEOUT": seconds])
        #expect(configuration.unlockTimeout == Double(seconds))
    }

    /// A lock forgets its challenge after 5 s: a longer wait would turn a slow unlock into the lock's
    /// `expired` denial; a wait of next to nothing would leave no time to answer a nonce.
    @Test(arguments: ["0.1", "5.5", "60", "three"])
    func anUnlockTimeoutOutsideItIsRefused(seconds: String) {
        #expect(throws: ServerConfiguration.ConfigurationError.self) {
            try ServerConfiguration.load(file: nil, environment: ["UNLOCKIT_UNLOCK_TIMEOUT": seconds])
        }
    }
}
