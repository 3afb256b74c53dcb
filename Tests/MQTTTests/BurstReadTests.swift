import Foundation
import SiteHarness
import Testing

@testable import MQTT

/// How many packets a turn of the event loop reads from one socket.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct MQTTBurstReadTests {
    /// Runs `body` once `loop` is held up (its thread sleeps for half a second), so that what
    /// `body` sends waits in the receivers' sockets for the loop's next turns.
    static func whileHeldUp(_ loop: MQTTEventLoop, _ body: () throws -> Void) async throws {
        let holding = LockedBox(false)
        loop.schedule(after: .zero) {
            holding.set(true)
            Thread.sleep(forTimeInterval: 0.5)
        }
        try await Network.waitUntil("the loop to be held up") { holding.get() }
        try body()
    }

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
            for client in [bursting, single, sender] { try await client.waitUntilConnected(timeout: .seconds(30)) }
            try await Task.sleep(for: .milliseconds(300))  // the subscriptions' SUBACKs

            // Hold the loop up while every message reaches both receivers' sockets.
            try await Self.whileHeldUp(loop) {
                for index in 0..<count {
                    try sender.publish(topic: "test/burst/\(index)", payload: Array("\(index)".utf8), qos: .atMostOnce)
                }
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

    /// As the server's link does: every message handled publishes an answer. libmosquitto's socket
    /// pair, which it writes a byte into for every packet and this loop never reads, would by now be
    /// full (500 packets sent before), and each publish would leave errno at EAGAIN, which ends a
    /// burst as if the socket had run dry. The pair is taken away when the client is made.
    @Test func aReceiverThatAnswersStillReadsInBursts() async throws {
        try await MQTTClientTests.Fixture.with { fixture in
            let loop = MQTTEventLoop(name: "burst-answer")
            let count = 100
            let turns = LockedBox<[Int]>([])
            let answering = LockedBox<MQTTClient?>(nil)
            let receiver = try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: "127.0.0.1", port: fixture.broker.port, clientID: "answering", username: "tester", password: "tester password",
                    subscriptions: ["test/answer/#"], subscriptionQoS: .atMostOnce, readsInBursts: true),
                loop: loop,
                delivery: .handler { message in
                    turns.update { $0.append(loop.turnCount) }
                    try? answering.get()?.publish(topic: "test/answered", payload: message.payload, qos: .atMostOnce)
                })
            answering.set(receiver)
            let sender = try fixture.client("answer-sender")
            for client in [receiver, sender] { client.start() }
            for client in [receiver, sender] { try await client.waitUntilConnected(timeout: .seconds(30)) }
            for index in 0..<500 { try receiver.publish(topic: "test/warm-up", payload: Array("\(index)".utf8), qos: .atMostOnce) }
            try await Task.sleep(for: .milliseconds(300))  // the SUBACK, and the warm-up written out

            try await Self.whileHeldUp(loop) {
                for index in 0..<count {
                    try sender.publish(topic: "test/answer/\(index)", payload: Array("\(index)".utf8), qos: .atMostOnce)
                }
            }
            try await Network.waitUntil("every message to arrive") { turns.get().count == count }
            let seen = turns.get()
            #expect((1...3).contains(seen.max()! - seen.min()! + 1), "the answering reader took \(seen.max()! - seen.min()! + 1) turns")
            for client in [receiver, sender] { await client.shutdown() }
            await loop.shutdown()
        }
    }
}
