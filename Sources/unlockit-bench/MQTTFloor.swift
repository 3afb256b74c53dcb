import Foundation
import MQTT
import Synchronization

/// The floor: plain request/response between two MQTT clients through the same broker, with none
/// of UnlockIT's work in between. QoS 1 unless told otherwise, as the issue defines the floor.
struct MQTTFloor {
    let host: String
    let port: Int
    let username: String
    let password: String
    var qos: QoS = .atLeastOnce

    struct Result: Codable {
        var roundTripP50Ms: Double
        var roundTripP99Ms: Double
        var pairsPerSecond: Double
    }

    /// Operations of several round trips each, many in flight: what the broker alone does with an
    /// unlock's messages (two exchanges) at the concurrency an unlock is measured at.
    struct Exchanges: Codable {
        /// 1 (at least once, the floor's) or 0 (at most once, the lock protocol's commands and events).
        var qos: Int
        var roundTripsPerOperation: Int
        var concurrency: Int
        var operations: Int
        var p50Ms: Double
        var p90Ms: Double
        var p99Ms: Double
        var perSecond: Double
        /// CPU per operation of each process: the floor's two clients are the benchmark's own
        /// (`loadGeneratorMicroseconds`); the server and the locks sit idle meanwhile.
        var cpu: CPUSplit?
    }

    /// Two connected clients, a requester and a responder; measure with them, then ``Link/close()``.
    func connect() async throws -> Link {
        // Requests and answers, matched by a sequence number in the payload.
        let pending = PendingReplies<UInt64>()
        func client(_ id: String, _ subscriptions: [String], _ handler: @escaping @Sendable (MQTTMessage) -> Void) throws -> MQTTClient {
            try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: host, port: port, clientID: id, username: username, password: password, subscriptions: subscriptions,
                    subscriptionQoS: qos),
                delivery: .handler(handler))
        }
        let responderBox = Mutex<MQTTClient?>(nil)
        let qos = qos
        let responder = try client("floor-responder-\(qos.rawValue)", ["bench/floor/\(qos.rawValue)/request"]) { message in
            let client = responderBox.withLock { $0 }
            try? client?.publish(topic: "bench/floor/\(qos.rawValue)/response", payload: message.payload, qos: qos)
        }
        responderBox.withLock { $0 = responder }
        let requester = try client("floor-requester-\(qos.rawValue)", ["bench/floor/\(qos.rawValue)/response"]) { message in
            let id = message.payload.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
            pending.answer(id)
        }
        responder.start()
        requester.start()
        try await responder.waitUntilConnected(timeout: .seconds(10))
        try await requester.waitUntilConnected(timeout: .seconds(10))
        try await Task.sleep(for: .milliseconds(300))
        let link = Link(requester: requester, responder: responder, pending: pending, qos: qos)
        for _ in 0..<200 { try await link.roundTrip() }  // warm up
        return link
    }

    /// The floor's clients, connected.
    struct Link: Sendable {
        let requester: MQTTClient
        let responder: MQTTClient
        let pending: PendingReplies<UInt64>
        let qos: QoS
        let counter = Counter()

        func roundTrip() async throws {
            let id = UInt64(counter.add())
            var payload = [UInt8](repeating: 0, count: 64)
            withUnsafeBytes(of: id) { payload.replaceSubrange(0..<8, with: $0) }
            try await pending.wait(id) { try requester.publish(topic: "bench/floor/\(qos.rawValue)/request", payload: payload, qos: qos) }
        }

        /// Round trips one at a time, for the latency.
        func latency(roundTrips: Int) async throws -> Samples {
            try await Samples.timing(roundTrips) { try await roundTrip() }
        }

        /// Many in flight for `duration`: the most request/response pairs per second.
        func pairsPerSecond(for duration: Duration, concurrency: Int) async throws -> Double {
            let run = try await operations(roundTrips: 1, concurrency: concurrency, for: duration)
            return Double(run.samples.count) / run.seconds
        }

        /// ``operations(roundTrips:concurrency:for:)``, summed up for the report.
        func exchanges(roundTrips: Int, concurrency: Int, for duration: Duration) async throws -> (summary: Exchanges, samples: Samples) {
            let (samples, seconds) = try await operations(roundTrips: roundTrips, concurrency: concurrency, for: duration)
            let summary = Exchanges(
                qos: Int(qos.rawValue), roundTripsPerOperation: roundTrips, concurrency: concurrency, operations: samples.count,
                p50Ms: samples.p50.milliseconds, p90Ms: samples.p90.milliseconds, p99Ms: samples.p99.milliseconds,
                perSecond: Double(samples.count) / seconds)
            return (summary, samples)
        }

        /// `concurrency` clients, each running operations of `roundTrips` round trips one after
        /// another for `duration`: the latency of each operation, and how long they all took.
        private func operations(roundTrips: Int, concurrency: Int, for duration: Duration) async throws -> (samples: Samples, seconds: Double) {
            let deadline = ContinuousClock.now + duration
            let start = ContinuousClock.now
            let samples = try await withThrowingTaskGroup(of: Samples.self) { group in
                for _ in 0..<concurrency {
                    group.addTask {
                        var samples = Samples()
                        while ContinuousClock.now < deadline {
                            let began = ContinuousClock.now
                            for _ in 0..<roundTrips { try await roundTrip() }
                            samples.add(began.duration(to: .now))
                        }
                        return samples
                    }
                }
                return try await group.reduce(into: Samples()) { $0.add($1) }
            }
            return (samples, start.duration(to: .now).seconds)
        }

        func close() async {
            await requester.shutdown()
            await responder.shutdown()
        }
    }
}
