/// MQTT quality of service. UnlockIT uses at-least-once for everything it cares about.
public enum QoS: Int32, Sendable {
    case atMostOnce = 0
    case atLeastOnce = 1
}

/// A message received from, or to be sent to, the broker.
public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: QoS
    public var retain: Bool

    public init(topic: String, payload: [UInt8], qos: QoS = .atLeastOnce, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }
}
