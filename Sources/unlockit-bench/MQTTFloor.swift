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

    func run(roundTrips: Int, throughputFor duration: Duration, concurrency: Int) async throws -> (Result, Samples) {
        // Requests and answers, matched by a sequence number in the payload.
        let pending = PendingReplies<UInt64>()
        func client(_ id: String, _ subscriptions: [String], _ handler: @escaping @Sendable (MQTTMessage) -> Void) throws -> MQTTClient {
            try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: host, port: port, clientID: id, username: username, password: password, subscriptions: subscriptions),
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

        let counter = Counter()
        @Sendable func roundTrip() async throws {
            let id = UInt64(counter.add())
            var payload = [UInt8](repeating: 0, count: 64)
            withUnsafeBytes(of: id) { payload.replaceSubrange(0..<8, with: $0) }
            try await pending.wait(id) { try requester.publish(topic: "bench/floor/request", payload: payload) }
        }

        // Warm up, then one at a time for the latency.
        for _ in 0..<200 { try await roundTrip() }
        var samples = Samples()
        for _ in 0..<roundTrips {
            let start = ContinuousClock.now
            try await roundTrip()
            samples.add(start.duration(to: .now))
        }

        // Many in flight for the most pairs per second.
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
        let elapsed = start.duration(to: .now).seconds
        await requester.shutdown()
        await responder.shutdown()
        let result = Result(
            roundTripP50Ms: samples.p50.milliseconds, roundTripP99Ms: samples.p99.milliseconds,
            pairsPerSecond: Double(done.current) / elapsed)
        return (result, samples)
    }
}
