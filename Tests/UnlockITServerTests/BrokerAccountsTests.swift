import Foundation
import Logging
import MQTT
import SiteHarness
import Testing

@testable import UnlockITServer

@Suite struct BrokerAccountsTests {
    /// A connected link whose broker never answers (a control message lost on a dying connection).
    final class SilentLink: CommandLink {
        var isConnected: Bool { true }
        func publish(topic: String, payload: [UInt8], qos: QoS, retain: Bool) throws(MQTTError) {}
        func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) {}
    }

    @Test("A broker command whose answer never comes ends when its caller is cancelled, not only at its timeout")
    func aCancelledCommandEnds() async throws {
        let accounts = BrokerAccounts(link: SilentLink(), timeout: .seconds(600), logger: Logger(label: "test"))
        let ended = LockedBox(0)
        func start() -> Task<Void, Never> {
            Task {
                _ = try? await accounts.run([BrokerAccounts.Command(command: "getClient")])
                ended.update { $0 += 1 }
            }
        }
        // One cancelled before it has begun to wait, one while it waits.
        let early = start()
        early.cancel()
        let waiting = start()
        try await Task.sleep(for: .milliseconds(200))
        waiting.cancel()
        // Polled, not awaited: a call that never ends must fail this test, not hang it.
        try? await Network.waitUntil("both calls to end", timeout: .seconds(20)) { ended.get() >= 2 }
        #expect(ended.get() == 2)
    }
}
