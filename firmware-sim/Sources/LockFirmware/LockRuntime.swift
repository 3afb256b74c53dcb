import Foundation
import LockProtocol
import Logging
import MQTT
import Synchronization
import UnlockITCore

/// Something a running lock reports locally (its "display"): the simulator prints these.
public enum LockNotice: Sendable, Equatable {
    case connected
    case disconnected
    case refused(code: Int32)
    case relay(RelayState)
    case pairingMode(Bool)
    case activated
    case denied(DenialReason)
    case malformedDropped
}

/// Where a lock finds its broker.
public struct BrokerEndpoint: Sendable {
    public var host: String
    public var port: Int
    public var password: String
    /// How the broker's certificate is checked; `nil` for plain TCP.
    public var tls: MQTTTLS?

    public init(host: String, port: Int, password: String, tls: MQTTTLS? = nil) {
        self.host = host
        self.port = port
        self.password = password
        self.tls = tls
    }
}

/// A ``LockDevice`` connected to the broker: it feeds commands from `cmd` to the device, publishes
/// the device's events on `evt`, drives the relay, persists the flash and keeps the retained status.
public final class LockRuntime: Sendable {
    public let lock: LockID
    /// Built once: every command received is checked against the first, every event sent to the second.
    private let commandTopic: String
    private let eventTopic: String
    private let device: Mutex<LockDevice>
    private let relay = Mutex<(state: RelayState, generation: Int)>((.locked, 0))
    private let flashFile: FlashFile
    private let client: MQTTClient
    private let notify: @Sendable (LockNotice) -> Void
    private let logger: Logger

    public init(
        device: LockDevice, flashFile: FlashFile, broker: BrokerEndpoint, loop: MQTTEventLoop? = nil, keepAlive: Int32 = 10,
        logger: Logger = Logger(label: "unlockit.lock"), notify: @escaping @Sendable (LockNotice) -> Void = { _ in }
    ) throws {
        let lock = device.lock
        self.lock = lock
        self.commandTopic = Topics.command(lock)
        self.eventTopic = Topics.event(lock)
        self.device = Mutex(device)
        self.flashFile = flashFile
        self.notify = notify
        self.logger = logger
        let configuration = MQTTClientConfiguration(
            host: broker.host, port: broker.port, clientID: lock.rawValue, username: lock.rawValue, password: broker.password,
            keepAlive: keepAlive, cleanSession: true,
            will: MQTTMessage(topic: Topics.status(lock), payload: LockStatus(online: false).encoded(), qos: .atLeastOnce, retain: true),
            // Commands and events travel at QoS 0, the retained status at QoS 1 (docs/protocol.md, "Transport").
            subscriptions: [Topics.command(lock)], subscriptionQoS: .atMostOnce, tls: broker.tls)
        // The handler and the event callback need `self`; they reach it through a box filled right below.
        let box = WeakBox()
        self.client = try MQTTClient(
            configuration: configuration, loop: loop,
            delivery: .handler { message in box.runtime?.received(message) },
            logger: logger,
            onConnectionEvent: { event in box.runtime?.connectionChanged(event) })
        box.runtime = self
    }

    /// Starts connecting; the lock reconnects by itself from then on.
    public func start() { client.start() }

    /// Publishes `{"online":false}` (retained) and disconnects cleanly.
    public func shutdown() async {
        try? client.publish(topic: Topics.status(lock), payload: LockStatus(online: false).encoded(), retain: true)
        await client.shutdown()
    }

    public var counters: LockCounters { device.withLock { $0.counters } }
    public var relayState: RelayState { relay.withLock { $0.state } }
    public var isActivated: Bool { device.withLock { $0.flash.activated } }
    public var isConnected: Bool { client.isConnected }
    /// Why the last attempt to reach the broker failed (a certificate refused, a connection refused);
    /// `nil` once connected.
    public var connectionFailure: String? { client.lastFailure }

    /// The pairing button.
    public func enterPairingMode() {
        let pairing = device.withLock { device -> Bool in
            device.enterPairingMode(now: .now)
            return device.isPairing(now: .now)
        }
        notify(.pairingMode(pairing))
    }

    // MARK: - Incoming

    private func received(_ message: MQTTMessage) {
        guard message.topic == commandTopic else { return }
        let now = ContinuousClock.now
        let effects = device.withLock { device -> [LockDevice.Effect] in
            guard message.payload.count <= WireFormat.maximumPayloadSize else {
                device.countMalformed()
                return []
            }
            let before = device.counters.malformed
            let effects = device.handle(message.payload, now: now)
            if device.counters.malformed != before { logger.debug("dropped a malformed command", metadata: ["lock": "\(lock)"]) }
            return effects
        }
        if effects.isEmpty { notify(.malformedDropped) }
        for effect in effects {
            guard apply(effect) else { return }
        }
    }

    /// Writes the flash; false if it could not be written. A write whose folder could not be synced
    /// took (``FlashFile/Saved/writtenNotDurable``): the lock boots from the file, so undoing an activation
    /// in memory that the file keeps would bring it back after a restart, with the server told it
    /// had failed.
    private func persist() -> Bool {
        let (flash, writeTime) = device.withLock { ($0.flash, $0.settings.flashWriteTime) }
        if writeTime > .zero {
            Thread.sleep(forTimeInterval: Double(writeTime.components.seconds) + Double(writeTime.components.attoseconds) * 1e-18)
        }
        do {
            if try flashFile.save(flash) == .writtenNotDurable {
                logger.error("wrote flash, but could not sync its folder: a power cut may undo the write", metadata: ["lock": "\(lock)"])
            }
        } catch {
            logger.error("could not write flash", metadata: ["lock": "\(lock)", "error": "\(error)"])
            return false
        }
        if flash.activated { notify(.activated) }
        return true
    }

    /// Carries out `effect`; false when the effects after it must not follow.
    @discardableResult
    private func apply(_ effect: LockDevice.Effect) -> Bool {
        switch effect {
        case .persist(let req):
            guard persist() else {
                // Nothing after a failed write: the server must not believe an activation the flash does not hold.
                for undo in device.withLock({ $0.activationNotStored(req: req) }) { apply(undo) }
                return false
            }
        case .publish(let event):
            if case .result(_, false, let reason?) = event { notify(.denied(reason)) }
            publish(event)
        case .openRelay:
            openRelay()
        case .statusChanged:
            publishStatus()
        }
        return true
    }

    private func connectionChanged(_ event: MQTTConnectionEvent) {
        // A challenge never outlives the connection it was issued on.
        device.withLock { $0.connectionChanged() }
        switch event {
        case .connected:
            publishStatus()
            notify(.connected)
        case .disconnected:
            notify(.disconnected)
        case .refused(let code):
            notify(.refused(code: code))
        }
    }

    // MARK: - Outgoing

    private func publish(_ event: Event) {
        do {
            try client.publish(topic: eventTopic, payload: event.encoded(), qos: .atMostOnce)
        } catch {
            logger.debug("could not publish an event", metadata: ["lock": "\(lock)", "error": "\(error)"])
        }
    }

    private func publishStatus() {
        let activated = device.withLock { $0.flash.activated }
        let status = LockStatus(online: true, activated: activated, firmware: Flash.firmwareVersion)
        try? client.publish(topic: Topics.status(lock), payload: status.encoded(), retain: true)
    }

    private func openRelay() {
        let (generation, wasLocked) = relay.withLock { relay -> (Int, Bool) in
            relay.generation += 1
            defer { relay.state = .unlocked }
            return (relay.generation, relay.state == .locked)
        }
        if wasLocked {
            notify(.relay(.unlocked))
            publish(.state(.unlocked))
        }
        let openFor = device.withLock { $0.settings.openDuration }
        // A timer on the MQTT thread rather than a task: a fleet opens thousands of relays a second.
        client.schedule(after: openFor) { [self] in
            // Only the last opening re-locks: a second grant while open extends the open time.
            let relock = relay.withLock { relay -> Bool in
                guard relay.generation == generation else { return false }
                relay.state = .locked
                return true
            }
            if relock {
                notify(.relay(.locked))
                publish(.state(.locked))
            }
        }
    }
}

/// Breaks the reference cycle runtime → client → handler → runtime.
private final class WeakBox: @unchecked Sendable {
    // @unchecked: written once in LockRuntime.init before the client is started, only read afterwards.
    weak var runtime: LockRuntime?
}
