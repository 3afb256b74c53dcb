import Foundation
import LockProtocol
import Logging
import MQTT
import ServiceLifecycle
import Synchronization
import UnlockITCore

/// The server's MQTT connection as a service of the server's service group: it connects (and keeps
/// reconnecting), hands lock messages to the ``LockGateway`` and control answers to ``BrokerAccounts``,
/// writes presence changes to the store, and disconnects cleanly on shutdown.
public final class BrokerLink: Service, Sendable {
    public let client: MQTTClient
    public let gateway: LockGateway
    public let accounts: BrokerAccounts
    /// Connected, and the server's broker role is in place: commands will reach the locks.
    private let readyFlag = Flag()
    private let store: any Store
    private let username: String
    private let logger: Logger

    public init(
        address: BrokerAddress, tls: MQTTTLS? = nil, username: String, password: String, store: any Store, unlockTimeout: Duration,
        metrics: ServerMetrics,
        logger: Logger, clock: ServerClock, lockMessagesPerMinute: Int = ServerConfiguration().lockMessagesPerMinute
    ) throws {
        let configuration = MQTTClientConfiguration(
            host: address.host, port: address.port,
            // Unique per process, so that a second server instance never takes over this one's session.
            clientID: "unlockit-server-\(UUID().uuidString.prefix(8).lowercased())",
            username: username, password: password, keepAlive: 5, cleanSession: true,
            subscriptions: [Topics.allEvents, Topics.allStatuses, BrokerAccounts.responseTopic],
            // QoS 0 (docs/protocol.md, "Transport"): with a clean session QoS 1 would redeliver nothing
            // after a reconnect, and cost an acknowledgement for every message a lock sends.
            subscriptionQoS: .atMostOnce,
            // Under load the locks' answers arrive faster than one per turn of the MQTT loop.
            readsInBursts: true, tls: tls)
        let router = Router()
        let readyFlag = self.readyFlag
        let stopping = self.stopping
        let connections = self.connections
        client = try MQTTClient(
            configuration: configuration, delivery: .handler { router.route($0) }, logger: logger,
            onConnectionEvent: { router.connectionChanged($0) })
        gateway = LockGateway(
            link: client, timeout: unlockTimeout, metrics: metrics, logger: logger, clock: clock, messagesPerLockPerMinute: lockMessagesPerMinute,
            isReady: { readyFlag.value })
        accounts = BrokerAccounts(link: client, logger: logger)
        router.attach(
            gateway: gateway, accounts: accounts,
            onConnectionChange: { [username, logger, accounts] connected in
                readyFlag.set(false)
                let connection = connections.next()
                guard connected else {
                    if !stopping.value {
                        logger.warning("lost the connection to the MQTT broker; unlocks answer 503 broker_unavailable until it is back")
                    }
                    return
                }
                // Every (re)connect: make sure the server may still command the locks (idempotent),
                // and keep trying while this connection lasts: the plugin may be slow to answer
                // while thousands of locks reconnect after a broker restart.
                Task {
                    let ready = await Self.setUp(
                        { try await accounts.ensureServerRole(username: username) },
                        while: { connections.current == connection && !stopping.value }, logger: logger)
                    guard ready else { return }
                    readyFlag.set(true)
                    logger.info("connected to the MQTT broker")
                }
            })
        self.store = store
        self.username = username
        self.logger = logger
    }

    private let stopping = Flag()
    /// Counts connection changes, so that a role check knows when its connection is gone.
    private let connections = Counter()

    /// Runs `attempt` until it succeeds (true) or `current` turns false (false), waiting `firstWait`
    /// after the first failure and twice as long after each next one, at most 30 s.
    static func setUp(
        _ attempt: () async throws -> Void, while current: () -> Bool, logger: Logger, firstWait: Duration = .seconds(1)
    ) async -> Bool {
        var wait = firstWait
        while current() {
            do {
                try await attempt()
                return current()
            } catch {
                guard current() else { return false }
                logger.error(
                    "could not set up the server's broker role; trying again",
                    metadata: ["error": "\(error)", "in": "\(wait.components.seconds) s"])
                try? await Task.sleep(for: wait)
                wait = min(wait * 2, .seconds(30))
            }
        }
        return false
    }

    /// Whether unlocks can reach the locks now.
    public var isReady: Bool { readyFlag.value && client.isConnected }

    public func run() async throws {
        client.start()
        let broker = "\(client.configuration.host):\(client.configuration.port)"
        logger.info("connecting to the MQTT broker", metadata: ["broker": "\(broker)"])
        // Persist presence changes once a second until shutdown, and say so while the broker cannot
        // be reached: 5 s after losing it (or after the start), then once a minute.
        var unreadySince: ContinuousClock.Instant? = .now
        var warned: ContinuousClock.Instant?
        await withGracefulShutdownHandler {
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                try? await Task.sleep(for: .seconds(1))
                await flushPresence()
                let now = ContinuousClock.now
                guard !isReady else {
                    (unreadySince, warned) = (nil, nil)
                    continue
                }
                let since = unreadySince ?? now
                unreadySince = since
                if now - since >= .seconds(5), warned.map({ now - $0 >= .seconds(60) }) ?? true {
                    warned = now
                    var metadata: Logger.Metadata = ["broker": "\(broker)", "for": "\((now - since).components.seconds) s"]
                    if let reason = client.lastFailure { metadata["reason"] = "\(reason)" }
                    if client.isConnected {
                        logger.warning(
                            "connected to the MQTT broker, but the server's broker role is not in place; unlocks answer 503 broker_unavailable",
                            metadata: metadata)
                    } else {
                        logger.warning("not connected to the MQTT broker; unlocks answer 503 broker_unavailable", metadata: metadata)
                    }
                }
            }
        } onGracefulShutdown: {
        }
        stopping.set(true)
        await flushPresence()
        await client.shutdown()
        logger.info("disconnected from the MQTT broker")
    }

    private func flushPresence() async {
        let changes = gateway.takePresenceChanges()
        guard !changes.isEmpty else { return }
        do {
            try await store.recordPresence(changes)
        } catch {
            logger.error("could not record lock presence", metadata: ["error": "\(error)"])
        }
    }
}

/// A count shared between threads.
private final class Counter: Sendable {
    private let storage = Atomic<Int>(0)
    var current: Int { storage.load(ordering: .sequentiallyConsistent) }
    /// Counts one more and returns the new count.
    func next() -> Int { storage.add(1, ordering: .sequentiallyConsistent).newValue }
}

/// A boolean shared between threads.
private final class Flag: Sendable {
    private let storage = Atomic<Bool>(false)
    var value: Bool { storage.load(ordering: .sequentiallyConsistent) }
    func set(_ value: Bool) { storage.store(value, ordering: .sequentiallyConsistent) }
}

/// Routes the MQTT client's callbacks (on its event loop thread) to their handlers.
private final class Router: Sendable {
    private struct Targets: Sendable {
        let gateway: LockGateway
        let accounts: BrokerAccounts
        let onConnectionChange: @Sendable (Bool) -> Void
    }

    private let targets = Mutex<Targets?>(nil)

    func attach(gateway: LockGateway, accounts: BrokerAccounts, onConnectionChange: @escaping @Sendable (Bool) -> Void) {
        targets.withLock { $0 = Targets(gateway: gateway, accounts: accounts, onConnectionChange: onConnectionChange) }
    }

    func route(_ message: MQTTMessage) {
        guard let targets = targets.withLock({ $0 }) else { return }
        if message.topic == BrokerAccounts.responseTopic {
            targets.accounts.handle(message)
        } else {
            targets.gateway.handle(message)
        }
    }

    func connectionChanged(_ event: MQTTConnectionEvent) {
        guard let targets = targets.withLock({ $0 }) else { return }
        switch event {
        case .connected:
            targets.gateway.brokerConnectionChanged(connected: true)
            targets.onConnectionChange(true)
        case .disconnected, .refused:
            targets.gateway.brokerConnectionChanged(connected: false)
            targets.onConnectionChange(false)
        }
    }
}
