import CMosquitto
import Glibc
import Logging
import Synchronization

/// One libmosquitto client and the state the event loop keeps for it.
///
/// `@unchecked Sendable`, justified: `mosq` is shared only through libmosquitto calls that are
/// thread-safe once `mosquitto_threaded_set` is on (publish queues under the library's own mutexes);
/// every `loop…` property is read and written only on the owning ``MQTTEventLoop``'s thread;
/// everything else that crosses threads is an `Atomic` or inside a `Mutex`.
final class ClientCore: @unchecked Sendable {
    let configuration: MQTTClientConfiguration
    let mosq: OpaquePointer
    let logger: Logger
    private let onMessage: @Sendable (MQTTMessage) -> Void
    private let onEvent: @Sendable (MQTTConnectionEvent) -> Void

    /// True between a CONNACK that accepted us and the loss of that connection.
    let connected = Atomic<Bool>(false)
    /// Set once ``MQTTClient/shutdown()`` was asked for; no publish is accepted after it.
    let stopping = Atomic<Bool>(false)
    /// Held by a publish from its check of ``connected`` until libmosquitto has queued the packet, and
    /// by the loop as it marks a lost connection: a publish that saw the old connection is queued
    /// before the loop goes on to reconnect, whose first step drops every queued packet, and never
    /// after it, where it would go out on the new connection (a stale command reaching a lock). What
    /// it holds runs inside it between the check and the queueing: tests widen the window with it.
    let publishGate = Mutex<(@Sendable () -> Void)?>(nil)
    /// True while the client sits in the loop's list of clients with output to flush.
    let dirtyQueued = Atomic<Bool>(false)
    /// Why the last connection attempt failed or the last connection ended; `nil` once connected.
    let lastFailure = Mutex<String?>(nil)
    /// The client's own TLS context (one reference), set while it is configured; `nil` for plain TCP.
    private(set) var tlsContext: OpaquePointer?
    /// A TLS client: asked on the loop's hot paths, where a look at the configuration's TLS settings
    /// would copy them.
    var usesTLS: Bool { tlsContext != nil }
    /// Who waits for a connection, and, once the client has stopped, the error every later wait gets.
    private let waiters = Mutex<(waiting: [Int: CheckedContinuation<Void, any Error>], closed: MQTTError?)>(([:], nil))

    // MARK: Event-loop-thread state

    enum Phase: Equatable {
        case idle, resolving, connecting, connected, waitingToRetry, stopping, stopped
    }
    var loopFD: Int32 = -1
    var loopWriteInterest = false
    var loopPhase = Phase.idle
    var loopAttempt = 0
    /// When the broker last accepted this client, and how many connections in a row dropped before
    /// a keep-alive period had passed (see `MQTTEventLoop.scheduleRetry`).
    var loopConnectedSince: ContinuousClock.Instant?
    var loopQuickDrops = 0
    /// The broker refused this attempt's CONNECT; its closing the connection then says nothing new.
    var loopRefused = false
    var loopDeadline: ContinuousClock.Instant?
    /// When libmosquitto's keep-alive bookkeeping (`mosquitto_loop_misc`) is next due for this client.
    var loopNextMisc = ContinuousClock.now
    /// Subscriptions waiting for the broker's answer, by message id; each asked for with
    /// ``MQTTClient/subscribe(_:timeout:)`` has a number of its own (`token`), for its timeout to
    /// find it and not a later subscription that reuses the message id.
    var loopSubscribeWaiters: [Int32: (topic: String, token: UInt64, continuation: CheckedContinuation<Void, any Error>?)] = [:]
    var loopSubscribeTokens: UInt64 = 0
    var loopStopWaiters: [@Sendable () -> Void] = []

    init(
        configuration: MQTTClientConfiguration, logger: Logger,
        onMessage: @escaping @Sendable (MQTTMessage) -> Void,
        onEvent: @escaping @Sendable (MQTTConnectionEvent) -> Void
    ) throws(MQTTError) {
        MosquittoLibrary.ensureInitialised()
        // What libmosquitto's connect refuses, refused here: otherwise the client would retry a
        // connect that cannot succeed, for ever, saying only "Invalid arguments provided."
        guard configuration.keepAlive == 0 || (5...65535).contains(configuration.keepAlive) else {
            throw .library(MOSQ_ERR_INVAL.rawValue, "the keep-alive must be 0 (none) or 5–65535 seconds, not \(configuration.keepAlive)")
        }
        guard (1...65535).contains(configuration.port) else {
            throw .library(MOSQ_ERR_INVAL.rawValue, "the broker's port must be 1–65535, not \(configuration.port)")
        }
        guard let mosq = mosquitto_new(configuration.clientID, configuration.cleanSession, nil) else {
            throw .library(MOSQ_ERR_NOMEM.rawValue, "mosquitto_new failed")
        }
        // The socket pair libmosquitto would write a byte into for every packet: this loop never
        // reads it (see `SocketPair`). Without it a client holds one descriptor, its socket.
        let detached = SocketPair.detach(from: mosq)
        self.mosq = mosq
        self.configuration = configuration
        self.logger = logger
        self.onMessage = onMessage
        self.onEvent = onEvent
        if !detached { logger.debug("libmosquitto's socket pair is left in place (a version this client does not know)") }
        try configure()
    }

    deinit {
        // Reached only after the loop let go of this client, so nothing drives `mosq` any more.
        mosquitto_destroy(mosq)
        if let tlsContext { SSL_CTX_free(tlsContext) }
    }

    private func configure() throws(MQTTError) {
        func check(_ rc: Int32) throws(MQTTError) {
            guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw .library(rc, MosquittoLibrary.describe(rc)) }
        }
        // Output is written by the event loop thread only; publish from other threads just queues.
        try check(mosquitto_threaded_set(mosq, true))
        try check(mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311))
        // Without TCP_NODELAY every QoS 1 round trip waits on Nagle and delayed ACK (≈ 40–90 ms).
        try check(mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1))
        // Unlimited in-flight messages: the server has many locks' requests outstanding at once.
        try check(mosquitto_max_inflight_messages_set(mosq, 0))
        if let tls = configuration.tls {
            // The client's own context, checked by OpenSSL against the name it was given (see
            // `TLSContext`); libmosquitto takes a reference of its own and frees it with the client. This
            // one is kept to read what the context noted, and freed in `deinit`.
            let context = try TLSContext.make(tls, host: configuration.host)
            tlsContext = context
            try check(mosquitto_void_option(mosq, MOSQ_OPT_SSL_CTX, UnsafeMutableRawPointer(context)))
            try check(mosquitto_int_option(mosq, MOSQ_OPT_SSL_CTX_WITH_DEFAULTS, 0))
        }
        if configuration.username != nil || configuration.password != nil {
            try check(mosquitto_username_pw_set(mosq, configuration.username, configuration.password))
        }
        if let will = configuration.will {
            let rc = will.payload.withUnsafeBytes { bytes in
                mosquitto_will_set(mosq, will.topic, Int32(bytes.count), bytes.baseAddress, will.qos.rawValue, will.retain)
            }
            try check(rc)
        }
        mosquitto_user_data_set(mosq, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_connect_callback_set(mosq) { _, object, code in
            guard let object else { return }
            Unmanaged<ClientCore>.fromOpaque(object).takeUnretainedValue().handleConnect(code)
        }
        mosquitto_disconnect_callback_set(mosq) { _, object, code in
            // libmosquitto calls this right after a failed read or write: `errno` still tells why.
            let error = errno
            guard let object else { return }
            Unmanaged<ClientCore>.fromOpaque(object).takeUnretainedValue().handleDisconnect(code, errno: error)
        }
        mosquitto_message_callback_set(mosq) { _, object, message in
            guard let object, let message else { return }
            Unmanaged<ClientCore>.fromOpaque(object).takeUnretainedValue().handleMessage(message.pointee)
        }
        mosquitto_subscribe_callback_set(mosq) { _, object, mid, count, granted in
            guard let object else { return }
            let refused = count < 1 || granted == nil || granted![0] >= 0x80
            Unmanaged<ClientCore>.fromOpaque(object).takeUnretainedValue().handleSubscribed(mid: mid, refused: refused)
        }
    }

    // MARK: Callbacks (event loop thread, inside a libmosquitto call)

    private func handleConnect(_ code: Int32) {
        // A CONNACK read while the loop closes a stopped client's socket: the client stays stopped.
        guard loopPhase != .stopped else { return }
        guard code == 0 else {
            let reason = String(cString: mosquitto_connack_string(code))
            lastFailure.withLock { $0 = "the broker refused the connection: \(reason)" }
            loopRefused = true
            logger.warning(
                "MQTT broker refused the connection", metadata: ["code": "\(code)", "reason": "\(reason)", "client": "\(configuration.clientID)"])
            onEvent(.refused(code: code))
            return
        }
        lastFailure.withLock { $0 = nil }
        loopPhase = .connected
        loopAttempt = 0
        loopConnectedSince = .now
        for topic in configuration.subscriptions {
            var mid: Int32 = 0
            let rc = mosquitto_subscribe(mosq, &mid, topic, configuration.subscriptionQoS.rawValue)
            if rc == MOSQ_ERR_SUCCESS.rawValue {
                loopSubscribeWaiters[mid] = (topic, 0, nil)
            } else {
                // Connected, but deaf to this topic until the next connection: say so.
                logger.error(
                    "MQTT subscription could not be sent",
                    metadata: ["client": "\(configuration.clientID)", "topic": "\(topic)", "error": "\(MosquittoLibrary.describe(rc))"])
            }
        }
        connected.store(true, ordering: .sequentiallyConsistent)
        let ready = waiters.withLock { state in
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for waiter in ready { waiter.resume() }
        logger.debug("MQTT connected", metadata: ["client": "\(configuration.clientID)"])
        onEvent(.connected)
    }

    private func handleDisconnect(_ code: Int32, errno error: Int32) {
        if loopRefused {
            loopRefused = false
        } else if code != MOSQ_ERR_SUCCESS.rawValue {
            lastFailure.withLock { $0 = MosquittoLibrary.describe(code, errno: error) }
        }
        let wasConnected = connected.exchange(false, ordering: .sequentiallyConsistent)
        if wasConnected {
            logger.debug("MQTT disconnected", metadata: ["client": "\(configuration.clientID)"])
            onEvent(.disconnected)
        }
    }

    // MARK: TLS (event loop thread)

    /// The first error a TLS attempt's socket met (a refused connection, say): libmosquitto's
    /// handshake goes on writing to the dead socket, which then only says "broken pipe".
    var loopSocketError: Int32 = 0

    /// A new attempt: what the certificate check and the socket of an earlier one said no longer
    /// tells why this one fails.
    func beginAttempt() {
        if let tlsContext { TLSContext.forgetRefusal(tlsContext) }
        loopSocketError = 0
    }

    /// Keeps `error` (an `errno`) as the attempt's first, unless it is none, or only says to wait.
    func noteSocketError(_ error: Int32) {
        guard loopSocketError == 0, error != 0, error != EAGAIN, error != EWOULDBLOCK, error != EINPROGRESS else { return }
        loopSocketError = error
    }

    /// The connection's OpenSSL object, while libmosquitto keeps it: from an attempt's start until
    /// its socket is closed in an orderly way (a failed handshake keeps it until the next attempt).
    private var ssl: OpaquePointer? { mosquitto_ssl_get(mosq).map(OpaquePointer.init) }

    /// A TLS handshake started and not finished.
    var isHandshaking: Bool { ssl.map { SSL_is_init_finished($0) == 0 } ?? false }

    /// The connection ended in its TLS handshake: libmosquitto closed the socket and kept the
    /// unfinished OpenSSL object, and called no one back. (An orderly close, after a refused CONNECT,
    /// say, frees the object and says why itself.)
    var handshakeFailed: Bool { usesTLS && mosquitto_socket(mosq) < 0 && isHandshaking }

    /// Why a TLS handshake failed: the broker's certificate, as the client's context noted its
    /// refusal (see `TLSContext`), or something else.
    var handshakeFailure: String {
        guard let tlsContext, let refusal = TLSContext.refusal(tlsContext) else { return "the TLS handshake with the broker failed" }
        return "the broker's certificate was refused: \(refusal)"
    }

    /// Whether the client has something to write. libmosquitto's answer, except in a TLS handshake:
    /// libmosquitto keeps wanting to write from the handshake's first write that had to wait until the
    /// first write after the handshake, and the loop would wake for writability all along. The
    /// handshake's own state says.
    var wantsWrite: Bool {
        if usesTLS, loopPhase == .connecting, let ssl, SSL_is_init_finished(ssl) == 0 {
            return SSL_want(ssl) == SSL_WRITING
        }
        return mosquitto_want_write(mosq)
    }

    private func handleMessage(_ message: mosquitto_message) {
        // Read while the loop closes a stopped client's socket: nobody asked for it any more.
        guard loopPhase != .stopped, let topic = message.topic else { return }
        let count = Int(max(message.payloadlen, 0))
        let payload: [UInt8] =
            if count > 0, let bytes = message.payload {
                Array(UnsafeRawBufferPointer(start: bytes, count: count))
            } else {
                []
            }
        onMessage(
            MQTTMessage(
                topic: String(cString: topic), payload: payload, qos: QoS(rawValue: message.qos) ?? .atLeastOnce, retain: message.retain))
    }

    private func handleSubscribed(mid: Int32, refused: Bool) {
        guard let waiter = loopSubscribeWaiters.removeValue(forKey: mid) else { return }
        if refused {
            logger.error("MQTT broker refused a subscription", metadata: ["topic": "\(waiter.topic)"])
        }
        waiter.continuation?.resume(with: refused ? .failure(MQTTError.subscriptionRefused(waiter.topic)) : .success(()))
    }

    // MARK: Waiting for a connection (any thread)

    /// Ends with the connection, the client's stop, ``cancelWaiter(id:with:)``, or the task's
    /// cancellation, whichever comes first; also when the cancellation comes while the wait is filed.
    func waitForConnection(id: Int) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // A wait cancelled before it is filed here would never be found by the cancellation.
                enum Start { case now, cancelled, closed(MQTTError), later }
                let start = waiters.withLock { state -> Start in
                    if connected.load(ordering: .sequentiallyConsistent) { return .now }
                    if Task.isCancelled { return .cancelled }
                    // Stopped: no connection will come, so the wait does not last until its timeout.
                    if let closed = state.closed { return .closed(closed) }
                    state.waiting[id] = continuation
                    return .later
                }
                switch start {
                case .now: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .closed(let error): continuation.resume(throwing: error)
                case .later: break
                }
            }
        } onCancel: {
            cancelWaiter(id: id, with: CancellationError())
        }
    }

    /// How many waits for a connection are filed (for tests).
    var filedWaits: Int { waiters.withLock { $0.waiting.count } }

    func cancelWaiter(id: Int, with error: any Error) {
        waiters.withLock { $0.waiting.removeValue(forKey: id) }?.resume(throwing: error)
    }

    /// Ends every wait for a connection with `error`, and every wait that comes later (the client
    /// has stopped).
    func cancelAllWaiters(with error: MQTTError) {
        let all = waiters.withLock { state in
            defer { state.waiting.removeAll() }
            state.closed = error
            return Array(state.waiting.values)
        }
        for waiter in all { waiter.resume(throwing: error) }
    }
}
