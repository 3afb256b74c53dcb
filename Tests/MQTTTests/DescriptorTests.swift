import SiteHarness
import Testing

@testable import MQTT

/// What a client holds open, which decides how many locks one fleet process can run.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct MQTTDescriptorTests {
    @Test func theLibraryHereLetsTheSocketPairBeTakenAway() {
        #expect(SocketPair.isDetachable)
        #expect(FileDescriptorLimit.perClient == 1)
    }

    /// 100 connected clients on one loop hold 100 descriptors: their sockets to the broker. With
    /// libmosquitto's socket pair left in place they would also hold 200 Unix sockets. Other suites
    /// run in this process at the same time and open and close descriptors of their own, so the
    /// sockets are counted by the broker's port, and the rest may move by less than half the number
    /// of clients. The port is this test's but for a client of another test that retries a port the
    /// kernel has since given this broker (see `TCPPeer`), so a few sockets either way are allowed.
    @Test func aConnectedClientHoldsOneDescriptor() async throws {
        try await MQTTClientTests.Fixture.with { fixture in
            let loop = MQTTEventLoop(name: "descriptors")
            let count = 100
            let before = try OpenDescriptors.now()
            var clients: [MQTTClient] = []
            for index in 0..<count { clients.append(try fixture.client("fd-\(index)", loop: loop)) }
            for client in clients { client.start() }
            for client in clients { try await client.waitUntilConnected(timeout: .seconds(30)) }
            let after = try OpenDescriptors.now()
            let sockets = after.connections(to: fixture.broker.port) - before.connections(to: fixture.broker.port)
            let others = after.otherThanTCP - before.otherThanTCP
            #expect((count - 5...count + 5).contains(sockets), "\(count) connected clients hold \(sockets) sockets to the broker")
            #expect(others < count / 2, "\(count) connected clients came with \(others) more descriptors that are not TCP sockets")
            for client in clients { await client.shutdown() }
            await loop.shutdown()
        }
    }
}
