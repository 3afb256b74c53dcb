/// How an ``MQTTClient`` reaches its broker.
public struct MQTTClientConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var clientID: String
    public var username: String?
    public var password: String?
    /// Seconds between keep-alive pings; a silent broker is detected after 1.5 × this. 0 (none) or
    /// 5–65535, as libmosquitto takes it; a client is not made with another.
    public var keepAlive: Int32
    /// A clean session: the broker keeps nothing for this client while it is away.
    public var cleanSession: Bool
    /// Published by the broker on this client's behalf when the connection dies without a DISCONNECT.
    public var will: MQTTMessage?
    /// Subscribed on every successful connect, since a clean session forgets them.
    public var subscriptions: [String]
    /// The QoS asked for by every subscription of this client (those above and ``MQTTClient/subscribe(_:)``).
    /// The broker delivers each message at the lower of this and the QoS it was published with.
    public var subscriptionQoS: QoS
    public var backoff: Backoff
    /// Read every packet the socket holds in one turn of the event loop, instead of one per turn.
    ///
    /// For a client that carries many conversations at once (the server's link, where answers from
    /// hundreds of locks queue up under load): libmosquitto reads one QoS 0 packet per call, so each
    /// further packet would cost a turn of the loop and an `epoll_wait`. A lock's socket rarely holds
    /// two packets, and the read that finds the socket empty is one system call more per turn.
    public var readsInBursts: Bool
    /// TLS, and how the broker's certificate is checked; `nil` for plain TCP.
    public var tls: MQTTTLS?

    public init(
        host: String, port: Int, clientID: String, username: String? = nil, password: String? = nil,
        keepAlive: Int32 = 10, cleanSession: Bool = true, will: MQTTMessage? = nil, subscriptions: [String] = [],
        subscriptionQoS: QoS = .atLeastOnce, backoff: Backoff = Backoff(), readsInBursts: Bool = false,
        tls: MQTTTLS? = nil
    ) {
        self.host = host
        self.port = port
        self.clientID = clientID
        self.username = username
        self.password = password
        self.keepAlive = keepAlive
        self.cleanSession = cleanSession
        self.will = will
        self.subscriptions = subscriptions
        self.subscriptionQoS = subscriptionQoS
        self.backoff = backoff
        self.readsInBursts = readsInBursts
        self.tls = tls
    }
}

/// A change in a client's connection, as seen on ``MQTTClient/connectionEvents``.
public enum MQTTConnectionEvent: Sendable, Equatable {
    case connected
    /// The broker answered CONNECT with a refusal (5 = not authorised).
    case refused(code: Int32)
    /// The connection ended; the client reconnects by itself unless it was shut down.
    case disconnected
}
