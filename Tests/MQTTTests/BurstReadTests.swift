import Foundation
import SiteHarness
import Testing

@testable import MQTT

/// How many packets a turn of the event loop reads from one socket.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct MQTTBurstReadTests {
    /// 100 messages wait in the sockets of two receivers on one loop while the loop is held up. The
    /// receiver that reads in bursts takes them in two turns (at most 64 packets a turn), the other
    /// one per turn.
    @Test func aBurstReaderTakesWhatTheSocketHoldsInFewTurns() async throws {
        try await MQTTClientTests.Fixture.with { fixture in
            let loop = MQTTEventLoop(name: "burst")
            let count = 100
            let turns = LockedBox<[String: [Int]]>([:])
            func receiver(_ id: String, bursts: Bool) throws -> MQTTClient {
                try MQTTClient(
                    configuration: MQTTClientConfiguration(
                        host: "127.0.0.1", port: fixture.broker.port, clientID: id, username: "tester", password: "tester password",
                        subscriptions: ["test/burst/#"], subscriptionQoS: .atMostOnce, readsInBursts: bursts),
                    loop: loop,
                    delivery: .handler { _ in
                        let turn = loop.turnCount
                        turns.update { $0[id, default: []].append(turn) }
                    })
            }
            let bursting = try receiver("bursting", bursts: true)
            let single = try receiver("single", bursts: false)
            let sender = try fixture.client("sender")
            for client in [bursting, single, sender] { client.start() }
            for client in [bursting, single, sender] { try await client.waitUntilConnected(timeout: .seconds(5)) }
            try await Task.sleep(for: .milliseconds(300))  // the subscriptions' SUBACKs

            // Hold the loop up while every message reaches both receivers' sockets.
            let holding = LockedBox(false)
            loop.schedule(after: .zero) {
                holding.set(true)
                Thread.sleep(forTimeInterval: 0.5)
            }
            try await Network.waitUntil("the loop to be held up") { holding.get() }
            for index in 0..<count {
                try sender.publish(topic: "test/burst/\(index)", payload: Array("\(index)".utf8), qos: .atMostOnce)
            }
            try await Network.waitUntil("every message to arrive") {
                let seen = turns.get()
                return seen["bursting"]?.count == count && seen["single"]?.count == count
            }
            let seen = turns.get()
            let burstTurns = seen["bursting"].map { $0.max()! - $0.min()! + 1 } ?? 0
            let singleTurns = seen["single"].map { $0.max()! - $0.min()! + 1 } ?? 0
            #expect((1...3).contains(burstTurns), "the burst reader took \(burstTurns) turns")
            #expect(singleTurns >= count / 2, "the single reader took \(singleTurns) turns")
            for client in [bursting, single, sender] { await client.shutdown() }
            await loop.shutdown()
        }
    }
}
