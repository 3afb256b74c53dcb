import Foundation
import MQTT
import Synchronization
import UnlockITCore

@testable import UnlockITServer

/// A broker link whose dynamic-security plugin does every command it is sent (the answers come from
/// another thread, as the broker's would), and remembers them: for tests of the server's steps
/// around a broker account without a mosquitto.
final class AgreeableBroker: CommandLink {
    private let accounts = Mutex<BrokerAccounts?>(nil)
    private let sent = Mutex<[String]>([])
    /// How long the answer to a command of this name takes (none: at once).
    private let delays = Mutex<[String: Duration]>([:])

    /// How many more times a command of this name is answered with an error.
    private let failures = Mutex<[String: Int]>([:])

    /// Answers commands named `command` only after `delay`, as a broker under load might.
    func delay(_ command: String, by delay: Duration) { delays.withLock { $0[command] = delay } }

    /// Answers the next `times` commands named `command` with an error, as a broker that cannot make them.
    func fail(_ command: String, times: Int) { failures.withLock { $0[command] = times } }

    /// The accounts API over this link.
    static func make() -> (BrokerAccounts, AgreeableBroker) {
        let broker = AgreeableBroker()
        let accounts = BrokerAccounts(link: broker, logger: Harness.logger)
        broker.accounts.withLock { $0 = accounts }
        return (accounts, broker)
    }

    /// The commands done so far, in order (`createClient`, `deleteClient`…).
    var commands: [String] { sent.withLock { $0 } }

    var isConnected: Bool { true }

    func publish(topic: String, payload: [UInt8], qos: QoS, retain: Bool) throws(MQTTError) {
        guard topic == BrokerAccounts.controlTopic,
            let message = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
            let commands = message["commands"] as? [[String: Any]]
        else { return }
        sent.withLock { $0 += commands.compactMap { $0["command"] as? String } }
        let responses: [[String: Any]] = commands.map { command in
            var response: [String: Any] = ["command": command["command"] ?? "", "correlationData": command["correlationData"] ?? ""]
            let failing = failures.withLock { failures in
                guard let name = command["command"] as? String, let left = failures[name], left > 0 else { return false }
                failures[name] = left - 1
                return true
            }
            if failing { response["error"] = "Internal error" }
            // Any account asked for is a lock's, with the lock's own role.
            if command["command"] as? String == "getClient", let name = command["username"] as? String, let lock = LockID(name) {
                response["data"] = ["client": ["username": name, "roles": [["rolename": BrokerAccounts.lockRole(lock)]]]]
            }
            return response
        }
        guard let answer = try? JSONSerialization.data(withJSONObject: ["responses": responses]) else { return }
        let accounts = self.accounts.withLock { $0 }
        let delay = delays.withLock { delays in commands.compactMap { delays[$0["command"] as? String ?? ""] }.max() ?? .zero }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(delay / .milliseconds(1)))) {
            accounts?.handle(MQTTMessage(topic: BrokerAccounts.responseTopic, payload: Array(answer)))
        }
    }

    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) {}
}
