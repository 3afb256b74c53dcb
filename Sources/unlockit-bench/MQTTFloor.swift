import Foundation
import MQTT
import Synchronization

/// The floor: plain QoS 1 request/response between two MQTT clients through the same broker,
/// with none of UnlockIT's work in between.
struct MQTTFloor {
    let host: String
    let port: Int
    let username: String
    let password: String

    struct Result: Codable {
        var roundTripP50Ms: Double
        var roundTripP99Ms: Double
        var pairsPerSecond: Double
    }

    /// Two connected clients, a requester and a responder; measure with them, then ``Link/close()``.
    func connect() async throws -> Link {
        // Requests and answers, matched by a sequence number in the payload.
        let pending = PendingReplies<UInt64>()
        func client(_ id: String, _ subscriptions: [String], _ handler: @escaping @Sendable (MQTTMessage) -> Void) throws -> MQTTClient {
            try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: host, port: port, clientID: id, username: username, password: password, subscriptions: subscriptions,
                    subscriptionQoS: .atLeastOnce),
                delivery: .handler(handler))
        }
        let responderBox = Mutex<MQTTClient?>(nil)
        let responder = try client("floor-responder", ["bench/floor/request"]) { message in
            let client = responderBox.withLock { $0 }
            try? client?.publish(topic: "bench/floor/response", payload: message.payload)
        }
        responderBox.withLock { $0 = responder }
        let requester = try client("floor-requester", ["bench/floor/response"]) { message in
            let id = message.payload.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
            pending.answer(id)
        }
        responder.start()
        requester.start()
        try await responder.waitUntilConnected(timeout: .seconds(10))
        try await requester.waitUntilConnected(timeout: .seconds(10))
        try await Task.sleep(for: .milliseconds(300))
        let link = Link(requester: requester, responder: responder, pending: pending)
        for _ in 0..<200 { try await link.roundTrip() }  // warm up
        return link
    }

    /// The floor's clients, connected.
    struct Link: Sendable {
        let requester: MQTTClient
        let responder: MQTTClient
        let pending: PendingReplies<UInt64>
        let counter = Counter()

        func roundTrip() async throws {
            let id = UInt64(counter.add())
            var payload = [UInt8](repeating: 0, count: 64)
            withUnsafeBytes(of: id) { payload.replaceSubrange(0..<8, with: $0) }
            try await pending.wait(id) { try requester.publish(topic: "bench/floor/request", payload: payload) }
        }

        /// Round trips one at a time, for the latency.
        func latency(roundTrips: Int) async throws -> Samples {
            try await Samples.timing(roundTrips) { try await roundTrip() }
        }

        /// Many in flight for `duration`: the most request/response pairs per second.
        func pairsPerSecond(for duration: Duration, concurrency: Int) async throws -> Double {
            let done = Counter()
            let deadline = ContinuousClock.now + duration
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<concurrency {
                    group.addTask {
                        while ContinuousClock.now < deadline {
                            try await roundTrip()
                            done.add()
                        }
                    }
                }
                try await group.waitForAll()
            }
            return Double(done.current) / start.duration(to: .now).seconds
        }

        func close() async {
            await requester.shutdown()
            await responder.shutdown()
        }
    }
}
