import Foundation
import LockProtocol
import Logging
import MQTT
import Synchronization
import UnlockITCore

/// The server's broker account, used by an operator's command on the server host for one change of
/// a lock's account, on a connection of its own beside the running server's (another client id).
public enum OperatorBroker {
    /// Deletes the broker account of lock `id` (already gone is as good as deleted), which
    /// disconnects a device connected with it at once: `unlockit-server release-lock`. The broker
    /// does that without the device's last will, and no device can write the lock's status any
    /// more, so its retained status (online, most likely) is cleared too, as a retirement clears it.
    public static func deleteLockAccount(_ id: LockID, configuration: ServerConfiguration, logger: Logger) async throws {
        let address = try configuration.brokerAddress()
        let accounts = Mutex<BrokerAccounts?>(nil)
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(
                host: address.host, port: address.port, clientID: "unlockit-operator-\(UUID().uuidString.prefix(8).lowercased())",
                username: configuration.mqttUsername, password: try configuration.resolvedMQTTPassword(), keepAlive: 5, cleanSession: true,
                subscriptions: [BrokerAccounts.responseTopic], subscriptionQoS: .atMostOnce, tls: try configuration.brokerTLS()),
            delivery: .handler { message in accounts.withLock { $0 }?.handle(message) }, logger: logger)
        let commands = BrokerAccounts(link: client, logger: logger)
        accounts.withLock { $0 = commands }
        client.start()
        do {
            // The subscription goes out with the connection, ahead of the command: the broker handles a
            // client's packets in order, so the answer finds it.
            do {
                try await client.waitUntilConnected(timeout: .seconds(10))
            } catch MQTTError.timedOut {
                throw OperatorBrokerError(reason: client.lastFailure ?? "the MQTT broker did not answer within 10 s")
            }
            try await commands.deleteLockAccount(id)
            // At QoS 0, ahead of the goodbye: the broker handles both in order before the command ends.
            try client.publish(topic: Topics.status(id), payload: [], qos: .atMostOnce, retain: true)
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
    }
}

/// Why the operator's connection to the broker did not come up: the client's own words ("Connection
/// refused", "the broker refused the connection: …"), never the password.
public struct OperatorBrokerError: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { reason }
}
