import CMosquitto
import Logging
import Synchronization

/// An MQTT 3.1.1 client over libmosquitto with an async Swift API.
///
/// It connects with a user name and password, sets TCP_NODELAY, registers an optional last will,
/// subscribes to its configured topics on every (re)connect, publishes (at QoS 1 unless told otherwise),
/// delivers incoming messages as an `AsyncSequence` (or to a handler), and reconnects by itself with
/// exponential backoff and jitter until ``shutdown()``.
///
/// ```swift
/// let client = try MQTTClient(configuration: .init(host: "127.0.0.1", port: 1883, clientID: "demo",
///                                                  subscriptions: ["unlockit/v1/locks/+/evt"]))
/// client.start()
/// try await client.waitUntilConnected(timeout: .seconds(5))
/// for await message in client.messages { … }
/// ```
public final class MQTTClient: Sendable {
    /// Where incoming messages go.
    public enum Delivery: Sendable {
        /// To ``MQTTClient/messages``.
        case stream
        /// To a handler, called on the event loop thread: it must return quickly and never block.
        case handler(@Sendable (MQTTMessage) -> Void)
    }

    public let configuration: MQTTClientConfiguration
    /// Incoming messages, when created with ``Delivery/stream``. Bounded: the oldest 65,536 are kept
    /// if nobody reads, and later ones are dropped.
    public let messages: AsyncStream<MQTTMessage>
    /// Connection changes. Keeps the newest 64 if nobody reads.
    public let connectionEvents: AsyncStream<MQTTConnectionEvent>

    let core: ClientCore
    private let loop: MQTTEventLoop
    private let ownsLoop: Bool
    /// Ends ``messages`` and ``connectionEvents`` once the client has stopped: a `for await` over
    /// either would otherwise wait for ever.
    private let finishStreams: @Sendable () -> Void
    private let nextWaiterID = Atomic<Int>(0)

    /// Creates a client driven by `loop`, or by a loop of its own when `loop` is `nil`.
    public init(
        configuration: MQTTClientConfiguration, loop: MQTTEventLoop? = nil, delivery: Delivery = .stream,
        logger: Logger = Logger(label: "unlockit.mqtt"),
        onConnectionEvent: (@Sendable (MQTTConnectionEvent) -> Void)? = nil
    ) throws(MQTTError) {
        let (messages, messageContinuation) = AsyncStream.makeStream(of: MQTTMessage.self, bufferingPolicy: .bufferingOldest(65_536))
        let (events, eventContinuation) = AsyncStream.makeStream(of: MQTTConnectionEvent.self, bufferingPolicy: .bufferingNewest(64))
        let onMessage: @Sendable (MQTTMessage) -> Void
        switch delivery {
        case .stream:
            onMessage = { messageContinuation.yield($0) }
        case .handler(let handler):
            onMessage = handler
            messageContinuation.finish()
        }
        self.configuration = configuration
        self.messages = messages
        self.connectionEvents = events
        self.core = try ClientCore(
            configuration: configuration, logger: logger, onMessage: onMessage,
            onEvent: { event in
                eventContinuation.yield(event)
                onConnectionEvent?(event)
            })
        self.loop = loop ?? MQTTEventLoop(name: "mqtt-\(configuration.clientID.prefix(8))", logger: logger)
        self.ownsLoop = loop == nil
        self.finishStreams = {
            messageContinuation.finish()
            eventContinuation.finish()
        }
    }

    /// Starts connecting in the background; reconnects by itself from then on. Only the first call
    /// does anything, and none after ``shutdown()``: a client is started once.
    public func start() {
        loop.submit(.add(core))
    }

    /// Whether the broker has accepted this client's current connection.
    public var isConnected: Bool { core.connected.load(ordering: .relaxed) }

    /// Why the last connection attempt failed or the last connection ended ("Connection refused",
    /// "Name or service not known", "the broker refused the connection: …"), for the owner's own log; `nil` before
    /// the first failure and from each accepted connection on. The client logs attempts at debug only.
    public var lastFailure: String? { core.lastFailure.withLock { $0 } }

    /// Waits until connected, or throws ``MQTTError/timedOut``.
    public func waitUntilConnected(timeout: Duration) async throws {
        let id = nextWaiterID.add(1, ordering: .relaxed).newValue
        let core = self.core
        // A cancelled wait ends at once (with CancellationError), also while no broker answers: the
        // caller's cancellation reaches the group's tasks.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await core.waitForConnection(id: id) }
            group.addTask {
                try await Task.sleep(for: timeout)
                core.cancelWaiter(id: id, with: MQTTError.timedOut)
                throw MQTTError.timedOut
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Publishes a message. Fails at once with ``MQTTError/notConnected`` while the broker is
    /// unreachable: at QoS 0 nothing is held back to be sent later, because a stale command must
    /// never reach a lock. At QoS 1 libmosquitto keeps a message the broker has not acknowledged and
    /// sends it again after a reconnect (clean session or not), even when this call threw: use QoS 1
    /// only for messages that may arrive late.
    public func publish(_ message: MQTTMessage) throws(MQTTError) {
        guard !core.stopping.load(ordering: .relaxed) else { throw .shutDown }
        // In the gate: a connection lost after the check waits for the packet to be queued, and
        // the reconnection that follows drops it (``ClientCore/publishGate``).
        let queued = core.publishGate.withLock { testHook -> Int32? in
            guard core.connected.load(ordering: .relaxed) else { return nil }
            testHook?()
            return message.payload.withUnsafeBytes { bytes in
                mosquitto_publish(core.mosq, nil, message.topic, Int32(bytes.count), bytes.baseAddress, message.qos.rawValue, message.retain)
            }
        }
        guard let rc = queued else { throw .notConnected }
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            throw rc == MOSQ_ERR_NO_CONN.rawValue ? .notConnected : .library(rc, MosquittoLibrary.describe(rc))
        }
        // The packet is only queued (`mosquitto_threaded_set`): the loop thread writes it. Writing
        // here instead would race with the loop closing the socket, since libmosquitto closes it
        // without a lock, and a reused descriptor could then receive the packet.
        if mosquitto_want_write(core.mosq) { loop.markDirty(core) }
    }

    /// Convenience for ``publish(_:)``.
    public func publish(topic: String, payload: [UInt8], qos: QoS = .atLeastOnce, retain: Bool = false) throws(MQTTError) {
        try publish(MQTTMessage(topic: topic, payload: payload, qos: qos, retain: retain))
    }

    /// Subscribes to one more topic (at the configuration's ``MQTTClientConfiguration/subscriptionQoS``) on
    /// the current connection and waits for the broker's answer;
    /// throws ``MQTTError/subscriptionRefused(_:)`` when an ACL denies it, and ``MQTTError/timedOut``
    /// when no answer comes within `timeout` (the broker may still take the subscription after it). Not
    /// repeated on reconnect: put permanent subscriptions in the configuration.
    public func subscribe(_ topic: String, timeout: Duration = .seconds(30)) async throws {
        let core = self.core
        let loop = self.loop
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            loop.submit(.subscribe(core, topic, timeout, continuation))
        }
    }

    /// Runs `action` on this client's event loop thread after `delay` (see ``MQTTEventLoop/schedule(after:_:)``).
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        loop.schedule(after: delay, action)
    }

    /// Disconnects cleanly (the broker drops the last will) and stops reconnecting.
    public func shutdown() async {
        core.stopping.store(true, ordering: .sequentiallyConsistent)
        let core = self.core
        let loop = self.loop
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.submit(.stop(core, done: { continuation.resume() }))
        }
        finishStreams()
        if ownsLoop { await loop.shutdown() }
    }

    /// A client dropped without ``shutdown()`` stops all the same, without anyone waiting: it says
    /// goodbye to the broker as `shutdown` does, and a loop of its own ends after that. Otherwise
    /// the loop would keep its connection (and its thread) for the life of the process.
    deinit {
        guard !core.stopping.exchange(true, ordering: .sequentiallyConsistent) else { return }
        let loop = self.loop
        let ownsLoop = self.ownsLoop
        let finishStreams = self.finishStreams
        loop.submit(
            .stop(
                core,
                done: {
                    finishStreams()
                    if ownsLoop { loop.stopRunning() }
                }))
    }
}
