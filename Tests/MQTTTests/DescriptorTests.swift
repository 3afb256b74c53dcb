import Foundation
import SiteHarness
import Testing

@testable import MQTT

/// What a client holds open, which decides how many locks one fleet process can run.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct MQTTDescriptorTests {
    static func openDescriptors() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
    }

    @Test func theLibraryHereLetsTheSocketPairBeTakenAway() {
        #expect(SocketPair.isDetachable)
        #expect(FileDescriptorLimit.perClient == 1)
    }

    /// 100 connected clients on one loop hold about 100 descriptors: their sockets. With
    /// libmosquitto's socket pair left in place they would hold 300. Other suites run in this
    /// process at the same time, so the bound leaves room for their descriptors coming and going.
    @Test func aConnectedClientHoldsOneDescriptor() async throws {
        try await MQTTClientTests.Fixture.with { fixture in
            let loop = MQTTEventLoop(name: "descriptors")
            let count = 100
            let before = try Self.openDescriptors()
            var clients: [MQTTClient] = []
            for index in 0..<count { clients.append(try fixture.client("fd-\(index)", loop: loop)) }
            for client in clients { client.start() }
            for client in clients { try await client.waitUntilConnected(timeout: .seconds(10)) }
            let held = try Self.openDescriptors() - before
            #expect(held >= count - 30 && held < 2 * count, "\(count) connected clients hold \(held) descriptors")
            for client in clients { await client.shutdown() }
            await loop.shutdown()
        }
    }
}
