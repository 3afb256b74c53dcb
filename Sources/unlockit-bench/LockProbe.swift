import Foundation
import LockProtocol
import MQTT
import UnlockITCore

/// How long a simulated lock takes to answer a `challenge` with its nonce, measured by a plain
/// client through the same broker, at the QoS the server uses (0): the lock's share of an unlock, to set
/// beside the MQTT floor.
struct LockProbe {
    let host: String
    let port: Int
    let username: String
    let password: String

    func run(locks: [String], count: Int) async throws -> Samples {
        let pending = PendingReplies<RequestID>()
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(
                host: host, port: port, clientID: "lock-probe", username: username, password: password, subscriptionQoS: .atMostOnce),
            delivery: .handler { message in
                guard let event = try? Event.decode(message.payload), case .nonce(let req, _) = event else { return }
                pending.answer(req)
            })
        client.start()
        try await client.waitUntilConnected(timeout: .seconds(10))
        let probed = Array(locks.prefix(50))
        for lock in probed { try await client.subscribe(Topics.event(LockID(lock)!)) }
        var samples = Samples()
        for index in 0..<count {
            let lock = LockID(probed[index % probed.count])!
            let req = RequestID.random()
            let start = ContinuousClock.now
            try await pending.wait(req) {
                try client.publish(topic: Topics.command(lock), payload: Command.challenge(req: req).encoded(), qos: .atMostOnce)
            }
            if index >= 20 { samples.add(start.duration(to: .now)) }
        }
        await client.shutdown()
        return samples
    }
}
