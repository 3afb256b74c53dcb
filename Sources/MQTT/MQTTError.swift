/// Failures of the MQTT client.
public enum MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The client is not connected to the broker right now; nothing was queued.
    case notConnected
    /// The client has been shut down.
    case shutDown
    /// The broker refused the subscription (an ACL said no).
    case subscriptionRefused(String)
    /// Waiting for the broker took longer than allowed.
    case timedOut
    /// libmosquitto returned an error code.
    case library(Int32, String)
    /// The client's TLS settings cannot be used (an unreadable authorities file).
    case tls(String)

    public var description: String {
        switch self {
        case .notConnected: "not connected to the MQTT broker"
        case .shutDown: "the MQTT client was shut down"
        case .subscriptionRefused(let topic): "the broker refused the subscription to \(topic)"
        case .timedOut: "timed out waiting for the MQTT broker"
        case .library(let code, let text): "libmosquitto error \(code): \(text)"
        case .tls(let text): "TLS: \(text)"
        }
    }
}
