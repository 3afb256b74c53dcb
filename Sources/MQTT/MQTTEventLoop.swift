import CMosquitto
import Foundation
import Glibc
import Logging
import Posix
import Synchronization

/// One thread that drives any number of MQTT clients with epoll.
///
/// libmosquitto's own `mosquitto_loop_start` spends a thread per client: right for the server's
/// single connection, wrong for a fleet of ten thousand simulated locks. This loop owns the sockets
/// of all its clients, reads and writes them when epoll says they are ready, runs keep-alives, and
/// reconnects lost clients with exponential backoff and jitter. Other threads hand it work through a
/// small inbox and an eventfd.
public final class MQTTEventLoop: Sendable {
    enum Command {
        case timer(ContinuousClock.Instant, @Sendable () -> Void)
        case add(ClientCore)
        case resolved(ClientCore, HostResolver.Answer)
        case subscribe(ClientCore, String, Duration, CheckedContinuation<Void, any Error>)
        /// Stops a client; `done` runs on the loop thread once it has stopped (or at once, when the loop has exited).
        case stop(ClientCore, done: @Sendable () -> Void)
    }

    private struct Inbox {
        var commands: [Command] = []
        var dirty: [ClientCore] = []
        /// Set as the loop exits: what is handed in from then on is answered at once (``refuse(_:)``).
        var closed = false
    }

    private let epoll = Epoll()
    private let inbox = Mutex(Inbox())
    private let running = Atomic<Bool>(true)
    private let threadID = Atomic<UInt>(0)
    /// Turns of the loop so far (one `epoll_wait` each): for tests of how much a turn gets done.
    private let turns = Atomic<Int>(0)
    private let exited = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    private let logger: Logger
    private let resolver: HostResolver

    /// How often keep-alives and connection timeouts are checked: the longest the loop ever sleeps.
    let housekeepingInterval: Duration
    /// How often a client's keep-alive bookkeeping runs: a quarter of its keep-alive, at most once a
    /// second, with jitter so that clients started together spread out. `unit` is a number in `0..<1`.
    static func miscInterval(for core: ClientCore, unit: Double) -> Duration {
        let base = min(Duration.seconds(1), .seconds(Int64(max(core.configuration.keepAlive, 1))) / 4)
        return base * (0.75 + 0.5 * unit)
    }

    /// How long a clean shutdown may take before the socket is simply closed.
    static let shutdownGrace = Duration.seconds(2)

    /// - Parameter resolver: looks up the brokers' host names, off this loop's thread.
    public convenience init(name: String = "mqtt-loop", logger: Logger = Logger(label: "unlockit.mqtt"), resolver: HostResolver = .shared) {
        self.init(name: name, logger: logger, housekeepingInterval: .milliseconds(250), resolver: resolver)
    }

    /// `housekeepingInterval` is a parameter for tests only: with a long one, waiting for
    /// housekeeping instead of for a wake-up shows plainly.
    init(name: String, logger: Logger, housekeepingInterval: Duration, resolver: HostResolver = .shared) {
        self.logger = logger
        self.resolver = resolver
        self.housekeepingInterval = housekeepingInterval
        // The thread writes its own name to the kernel (where `top -H`, `perf` and /proc show it)
        // before anything else, and the loop exists only once it has. Foundation's `Thread.name`,
        // set from inside the thread or after `start()`, still left the thread with its parent's
        // name at times (two runs in five of the test). Linux keeps 15 bytes of a name.
        let threadName = ThreadName.fitted(name)
        let named = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            ThreadName.setCurrent(threadName)
            named.signal()
            self.run()
        }
        thread.start()
        // Foundation's start() does not report a thread it could not create; the loop then never
        // runs, as before, but the initialiser does not wait for it for good.
        if named.wait(timeout: .now() + .seconds(30)) == .timedOut {
            logger.error("the MQTT loop's thread did not start within 30 s", metadata: ["loop": "\(threadName)"])
        }
    }

    var isLoopThread: Bool { threadID.load(ordering: .relaxed) == UInt(pthread_self()) }

    var turnCount: Int { turns.load(ordering: .relaxed) }

    /// Hands `command` to the loop, waking it unless `wake` is false. From the loop thread itself no
    /// wake-up is needed: the loop empties its inbox before it waits again.
    func submit(_ command: Command, wake: Bool = true) {
        let accepted = inbox.withLock { box -> Bool in
            guard !box.closed else { return false }
            box.commands.append(command)
            return true
        }
        guard accepted else { return Self.refuse(command) }
        if wake && !isLoopThread { epoll.wake() }
    }

    /// Answers work handed to a loop that has exited, which nobody else would: a stop is done (the
    /// loop stopped every client as it exited), a subscription fails; a start and a timer are
    /// dropped. Without this a second `shutdown()`, or a `subscribe` after one, would wait for ever.
    private static func refuse(_ command: Command) {
        switch command {
        case .stop(_, let done): done()
        case .subscribe(_, _, _, let continuation): continuation.resume(throwing: MQTTError.shutDown)
        case .timer, .add, .resolved: break
        }
    }

    /// Asks the loop to write what `core` has queued. Cheap when called repeatedly.
    func markDirty(_ core: ClientCore) {
        guard !core.dirtyQueued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        inbox.withLock { $0.dirty.append(core) }
        if !isLoopThread { epoll.wake() }
    }

    /// Runs `action` on the loop thread after `delay`: a timer for code that lives on the loop (a
    /// simulated lock re-locking its relay) without a task or a thread of its own.
    ///
    /// A timer due later than twice the housekeeping interval wakes nobody: the loop looks at its
    /// inbox at least once per interval, so it files the timer well before it is due. (Every unlock
    /// sets its timeout this way, right before the publish that wakes the loop anyway.)
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        submit(.timer(.now + delay, action), wake: delay < housekeepingInterval * 2)
    }

    /// Stops the thread. Clients still attached are disconnected without ceremony.
    public func shutdown() async {
        stopRunning()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = exited.withLock { state -> Bool in
                if state.done { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Tells the thread to exit after its current turn, without waiting for it (see ``shutdown()``).
    func stopRunning() {
        running.store(false, ordering: .sequentiallyConsistent)
        epoll.wake()
    }

    // MARK: - The loop thread

    private final class State {
        var byFD: [Int32: ClientCore] = [:]
        var clients: [ObjectIdentifier: ClientCore] = [:]
        var nextHousekeeping = ContinuousClock.now
        var timers = TimerHeap()
        /// Clients waiting to connect again: the loop wakes for the earliest, so that each client's
        /// backoff and jitter hold to the millisecond, not to housekeeping's beat.
        var retries = DeadlineQueue<ClientCore>()
        /// Jitter for keep-alive bookkeeping: xorshift64, seeded once. It has no security role, and
        /// the system generator costs a system call per number (thousands a second in a fleet).
        var jitter = UInt64.random(in: 1...UInt64.max)

        func nextUnit() -> Double {
            jitter ^= jitter << 13
            jitter ^= jitter >> 7
            jitter ^= jitter << 17
            return Double(jitter >> 11) / Double(1 << 53)
        }
    }

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .sequentiallyConsistent)
        let state = State()
        let capacity = 512
        let events = UnsafeMutableBufferPointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        let clock = ContinuousClock()

        while running.load(ordering: .relaxed) {
            let wake = min(state.nextHousekeeping, state.timers.earliest ?? state.nextHousekeeping, state.retries.earliest ?? state.nextHousekeeping)
            // Work handed in from this thread (a handler's publish, a timer's) means no sleeping.
            let pending = inbox.withLock { !$0.commands.isEmpty || !$0.dirty.isEmpty }
            let timeout = pending ? 0 : max(0, milliseconds(until: wake, now: clock.now))
            let count = epoll.wait(into: events, timeoutMilliseconds: Int32(timeout))
            turns.add(1, ordering: .relaxed)
            for index in 0..<count {
                let event = events[index]
                if event.data.u64 == Epoll.wakeToken {
                    epoll.drainWake()
                    continue
                }
                let fd = Int32(truncatingIfNeeded: event.data.u64)
                guard let core = state.byFD[fd] else { continue }
                if core.usesTLS, core.loopPhase == .connecting {
                    handshake(core, events: event.events, state)
                    continue
                }
                if event.events & (EPOLLIN.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 {
                    read(core)
                    // What the read produced (acknowledgements, a handler's answer) goes out at once:
                    // the socket is almost always writable, and waiting for epoll to say so would
                    // cost two epoll_ctl calls and a loop turn per message.
                    if mosquitto_socket(core.mosq) == core.loopFD, mosquitto_want_write(core.mosq) {
                        mosquitto_loop_write(core.mosq, 1)
                    }
                    guard afterIO(core, state) else { continue }
                }
                if event.events & EPOLLOUT.rawValue != 0 {
                    mosquitto_loop_write(core.mosq, 1)
                    afterIO(core, state)
                }
            }
            drainInbox(state)
            let now = clock.now
            if !state.timers.isEmpty {
                for action in state.timers.popDue(now) { action() }
                // What the timers published goes out now, not after the next wait.
                drainInbox(state)
            }
            if let due = state.retries.earliest, now >= due { retry(state, now: now) }
            if now >= state.nextHousekeeping {
                housekeeping(state, now: now)
                state.nextHousekeeping = now + housekeepingInterval
            }
        }

        for core in state.clients.values { finishStop(core, state) }
        let leftover = inbox.withLock { box -> [Command] in
            box.closed = true
            defer { box.commands.removeAll() }
            return box.commands
        }
        for command in leftover { Self.refuse(command) }
        let waiters = exited.withLock { exit -> [CheckedContinuation<Void, Never>] in
            exit.done = true
            defer { exit.waiters.removeAll() }
            return exit.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The most reads of one client in one turn of the loop, so that a flood on one socket cannot
    /// starve the others, the inbox and the timers.
    static let burstLimit = 64

    /// Reads what `core`'s socket holds: one read, or with ``MQTTClientConfiguration/readsInBursts``
    /// reads until it is dry, at most ``burstLimit`` of them.
    ///
    /// libmosquitto's `mosquitto_loop_read` ignores the count it is given: it reads as many packets
    /// as the client has QoS 1 or 2 messages queued, and at least one, so one packet per call at
    /// QoS 0 (the server's and the locks' traffic). A client with many QoS 1 messages in flight can
    /// read more than ``burstLimit`` packets in a turn. It leaves `errno` at `EAGAIN` when the socket ran dry (its result is then still
    /// success), and returns an error when the connection failed (having closed the socket). A stale
    /// `EAGAIN` from a callback only ends the burst early: epoll is level-triggered, so what is left
    /// is read in the next turn.
    private func read(_ core: ClientCore) {
        guard core.configuration.readsInBursts else {
            mosquitto_loop_read(core.mosq, 1)
            return
        }
        for _ in 0..<Self.burstLimit {
            errno = 0
            let rc = mosquitto_loop_read(core.mosq, 1)
            guard rc == MOSQ_ERR_SUCCESS.rawValue, errno != EAGAIN, errno != EWOULDBLOCK,
                mosquitto_socket(core.mosq) == core.loopFD
            else { return }
        }
    }

    /// A TLS client's turn while the broker has not yet accepted it: the handshake, then the CONNECT
    /// and its answer.
    ///
    /// libmosquitto goes on with a handshake only from its read call, whichever way the socket is
    /// ready (its write call does nothing until the handshake is over). And it takes a failed write
    /// in the handshake (the broker refused or reset the connection) as one to try again and keeps the
    /// socket: hung up, it would be ready in every turn, and the loop would spin until the keep-alive
    /// ended the attempt. Such an attempt ends here, and the next one starts after the backoff.
    private func handshake(_ core: ClientCore, events: UInt32, _ state: State) {
        let socket = core.loopFD
        // One read: nothing comes in bursts before the CONNACK.
        errno = 0
        mosquitto_loop_read(core.mosq, 1)
        core.noteSocketError(errno)
        // Only a handshake left unfinished: after it, libmosquitto's own reads and writes find a dead
        // socket, close it and say so (and a CONNACK read just now may have accepted the client).
        if mosquitto_socket(core.mosq) == socket, core.loopPhase == .connecting, core.isHandshaking,
            events & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0
        {
            abandon(core, socket: socket, state)
            return
        }
        // The CONNECT, queued by the connect call, goes out once the handshake is over.
        if mosquitto_socket(core.mosq) == socket, core.wantsWrite { mosquitto_loop_write(core.mosq, 1) }
        afterIO(core, state)
    }

    /// Ends an attempt whose connection died under libmosquitto without its noticing (see
    /// `handshake`): the socket leaves the loop, libmosquitto closes it as the next attempt starts
    /// (or as the client is released), and the reason is the first error the attempt met.
    private func abandon(_ core: ClientCore, socket: Int32, _ state: State) {
        var pending: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(socket, SOL_SOCKET, SO_ERROR, &pending, &length)
        core.noteSocketError(pending)
        let error = core.loopSocketError
        epoll.remove(socket)
        if state.byFD[socket] === core { state.byFD[socket] = nil }
        core.loopFD = -1
        core.loopWriteInterest = false
        connectionLost(core, state)
        let reason = error != 0 ? String(cString: strerror(error)) : "the broker closed the connection during the TLS handshake"
        core.lastFailure.withLock { $0 = reason }
        logger.debug("MQTT TLS connection lost in the handshake", metadata: ["client": "\(core.configuration.clientID)", "error": "\(reason)"])
    }

    private func milliseconds(until deadline: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Int {
        let remaining = now.duration(to: deadline)
        return Int(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000) + 1
    }

    private func drainInbox(_ state: State) {
        // Taken whole, not copied and then cleared: clearing a list still shared with the copy
        // would allocate a new buffer for it on every turn.
        let (commands, dirty) = inbox.withLock { box -> ([Command], [ClientCore]) in
            (exchange(&box.commands, with: []), exchange(&box.dirty, with: []))
        }
        for core in dirty {
            // Cleared before writing, so a publish that races with this write queues the client again.
            // A read-modify-write, not a store: it synchronises with the publisher's exchange, so the
            // look at libmosquitto's queue below cannot run ahead of it (as a plain load may after a
            // store on ARM) and miss a packet whose publisher saw the flag still set.
            _ = core.dirtyQueued.exchange(false, ordering: .acquiringAndReleasing)
            guard core.loopFD >= 0, mosquitto_want_write(core.mosq) else { continue }
            mosquitto_loop_write(core.mosq, 1)
            afterIO(core, state)
        }
        for command in commands {
            switch command {
            case .timer(let deadline, let action):
                state.timers.insert(deadline, action)
            case .add(let core):
                // A client starts once. Again, it would drop its connection to make a new one; after
                // `shutdown()`, a stopped client would come back to life.
                guard core.loopPhase == .idle, !core.stopping.load(ordering: .sequentiallyConsistent) else {
                    logger.debug("MQTT client already started or shut down", metadata: ["client": "\(core.configuration.clientID)"])
                    continue
                }
                state.clients[ObjectIdentifier(core)] = core
                connect(core, state)
            case .resolved(let core, let answer):
                // A client stopped while its broker's name was looked up stays stopped.
                guard core.loopPhase == .resolving else { continue }
                connect(core, to: answer, state)
            case .subscribe(let core, let topic, let timeout, let continuation):
                subscribe(core, topic: topic, timeout: timeout, continuation: continuation, state)
            case .stop(let core, let done):
                stop(core, done: done, state)
            }
        }
    }

    private func housekeeping(_ state: State, now: ContinuousClock.Instant) {
        for core in state.clients.values {
            switch core.loopPhase {
            case .connecting, .connected:
                // Keep-alive pings, and closing a connection the broker stopped answering. Each client
                // at most once a second, at its own moment: ten thousand calls at once would stall
                // the loop for milliseconds.
                guard now >= core.loopNextMisc else { continue }
                core.loopNextMisc = now + Self.miscInterval(for: core, unit: state.nextUnit())
                mosquitto_loop_misc(core.mosq)
                afterIO(core, state)
            case .stopping:
                if let deadline = core.loopDeadline, now >= deadline { finishStop(core, state) }
            case .idle, .resolving, .stopped, .waitingToRetry:
                break
            }
        }
    }

    /// Starts the attempts that are due. An entry stays when its client leaves the wait some other
    /// way (a shutdown, a connection): only a client still waiting, and due, is started.
    private func retry(_ state: State, now: ContinuousClock.Instant) {
        for core in state.retries.popDue(now) where core.loopPhase == .waitingToRetry {
            guard let deadline = core.loopDeadline, deadline <= now else { continue }
            connect(core, state)
        }
    }

    /// Reconciles the loop's view of a client's socket with libmosquitto's after any call into it.
    /// Returns whether the client still has a socket.
    @discardableResult
    private func afterIO(_ core: ClientCore, _ state: State) -> Bool {
        let socket = mosquitto_socket(core.mosq)
        if socket != core.loopFD {
            if core.loopFD >= 0 {
                epoll.remove(core.loopFD)
                if state.byFD[core.loopFD] === core { state.byFD[core.loopFD] = nil }
            }
            core.loopFD = -1
            core.loopWriteInterest = false
            guard socket >= 0 else {
                connectionLost(core, state)
                return false
            }
            register(core, socket: socket, state)
            return true
        }
        guard socket >= 0 else { return false }
        let wantsWrite = core.wantsWrite
        if wantsWrite != core.loopWriteInterest {
            epoll.modify(socket, write: wantsWrite)
            core.loopWriteInterest = wantsWrite
        }
        return true
    }

    private func register(_ core: ClientCore, socket: Int32, _ state: State) {
        // libmosquitto opens its socket without close-on-exec: a child process started meanwhile
        // would keep it open, and then libmosquitto's close would no longer take it out of epoll.
        _ = fcntl(socket, F_SETFD, fcntl(socket, F_GETFD) | FD_CLOEXEC)
        core.loopFD = socket
        // Always watch for writability first: it signals a completed non-blocking connect.
        core.loopWriteInterest = true
        state.byFD[socket] = core
        epoll.add(socket, write: true)
    }

    /// Starts a connection attempt: at once when the broker's address is known, else once the
    /// resolver has looked its name up (see ``HostResolver``), so that a slow DNS server holds up
    /// no other client of this loop.
    private func connect(_ core: ClientCore, _ state: State) {
        let known = resolver.resolve(core.configuration.host) { [self] answer in submit(.resolved(core, answer)) }
        guard let known else {
            core.loopPhase = .resolving
            return
        }
        connect(core, to: known, state)
    }

    private func connect(_ core: ClientCore, to answer: HostResolver.Answer, _ state: State) {
        let configuration = core.configuration
        let address: String
        switch answer {
        case .success(let addresses):
            // Attempts that keep failing try each of a name's addresses in turn.
            address = addresses[core.loopAttempt % addresses.count]
        case .failure(let failure):
            failed(core, reason: failure.message, state)
            return
        }
        // Always the numeric address, also for a reconnect: libmosquitto would look a name up again.
        core.beginAttempt()
        errno = 0
        let rc = mosquitto_connect_async(core.mosq, address, Int32(configuration.port), configuration.keepAlive)
        let error = errno
        // A TLS handshake starts inside the call, and its first write may already have failed.
        if core.usesTLS { core.noteSocketError(error) }
        let socket = mosquitto_socket(core.mosq)
        guard rc == MOSQ_ERR_SUCCESS.rawValue, socket >= 0 else {
            if socket >= 0 { mosquitto_disconnect(core.mosq) }
            let reason =
                rc == MOSQ_ERR_TLS.rawValue && core.usesTLS
                ? core.handshakeFailure : MosquittoLibrary.describe(rc, errno: error)
            failed(core, reason: reason, state)
            return
        }
        core.loopPhase = .connecting
        register(core, socket: socket, state)
    }

    /// A connection attempt that failed before it reached the network: retried after the backoff.
    private func failed(_ core: ClientCore, reason: String, _ state: State) {
        // Logged at debug only: a fleet has thousands of clients. `MQTTClient.lastFailure` tells
        // the owner why (an unknown host, an unreachable network), for a log of its own.
        core.lastFailure.withLock { $0 = reason }
        logger.debug("MQTT connect attempt failed", metadata: ["client": "\(core.configuration.clientID)", "error": "\(reason)"])
        scheduleRetry(core, state)
    }

    private func connectionLost(_ core: ClientCore, _ state: State) {
        if core.loopPhase == .connecting, core.handshakeFailed { core.lastFailure.withLock { $0 = core.handshakeFailure } }
        for (_, waiter) in core.loopSubscribeWaiters { waiter.continuation?.resume(throwing: MQTTError.notConnected) }
        core.loopSubscribeWaiters.removeAll()
        switch core.loopPhase {
        case .stopping:
            finishStop(core, state)
        case .stopped:
            break
        default:
            // In the gate: a publish that saw the connection is queued before the retry drops it.
            core.publishGate.withLock { _ in core.connected.store(false, ordering: .sequentiallyConsistent) }
            scheduleRetry(core, state)
        }
    }

    private func scheduleRetry(_ core: ClientCore, _ state: State) {
        // The first reconnection after a connection is quick. But connections that keep dropping
        // before a keep-alive period has passed (another client taking the id, a broker that accepts
        // and then drops the client) back off further each time, rather than reconnecting several
        // times a second for ever; one that held resets that count.
        if let since = core.loopConnectedSince {
            let held = ContinuousClock.now - since >= .seconds(Int64(max(core.configuration.keepAlive, 1)))
            core.loopQuickDrops = held ? 0 : core.loopQuickDrops + 1
            core.loopConnectedSince = nil
        }
        let delay = core.configuration.backoff.delay(attempt: max(core.loopAttempt, core.loopQuickDrops - 1))
        core.loopAttempt += 1
        core.loopPhase = .waitingToRetry
        let deadline = ContinuousClock.now + delay
        core.loopDeadline = deadline
        state.retries.insert(deadline, core)
    }

    private func subscribe(
        _ core: ClientCore, topic: String, timeout: Duration, continuation: CheckedContinuation<Void, any Error>, _ state: State
    ) {
        guard core.loopPhase == .connected, core.loopFD >= 0 else {
            continuation.resume(throwing: MQTTError.notConnected)
            return
        }
        var mid: Int32 = 0
        let rc = mosquitto_subscribe(core.mosq, &mid, topic, core.configuration.subscriptionQoS.rawValue)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            continuation.resume(throwing: MQTTError.library(rc, MosquittoLibrary.describe(rc)))
            return
        }
        core.loopSubscribeTokens += 1
        let token = core.loopSubscribeTokens
        core.loopSubscribeWaiters[mid] = (topic, token, continuation)
        // A broker that keeps the connection but never answers must not hold the caller for ever.
        // The timer runs on this thread, as every change of the waiters does.
        // Weakly: a client stopped meanwhile is not kept for the rest of the timeout.
        schedule(after: timeout) { [weak core, mid] in
            guard let core, let waiter = core.loopSubscribeWaiters[mid], waiter.token == token else { return }
            core.loopSubscribeWaiters[mid] = nil
            waiter.continuation?.resume(throwing: MQTTError.timedOut)
        }
        mosquitto_loop_write(core.mosq, 1)
        afterIO(core, state)
    }

    private func stop(_ core: ClientCore, done: @escaping @Sendable () -> Void, _ state: State) {
        core.loopStopWaiters.append(done)
        switch core.loopPhase {
        case .stopped:
            finishStop(core, state)
        case .stopping:
            break
        case .connected where core.loopFD >= 0:
            // A DISCONNECT tells the broker to discard the last will: this is a clean goodbye.
            core.loopPhase = .stopping
            core.loopDeadline = .now + Self.shutdownGrace
            mosquitto_disconnect(core.mosq)
            mosquitto_loop_write(core.mosq, 1)
            afterIO(core, state)
        default:
            finishStop(core, state)
        }
    }

    /// The most reads ``closeSocket(of:_:)`` spends on what a stopped client's socket still holds.
    static let closeReadLimit = 10_000

    /// Makes libmosquitto close a stopped client's socket now, not when the client is released.
    ///
    /// `mosquitto_disconnect` only queues a DISCONNECT, which is never written to a socket still
    /// connecting, nor to one whose peer stopped reading (the end of the shutdown grace), and
    /// libmosquitto has no call that just closes. So the socket is shut down under it (which ends a
    /// connect in progress too), and libmosquitto's reads then find its end and close it themselves,
    /// keeping its own state consistent. Its state is `disconnected` from `mosquitto_disconnect` on,
    /// without which a read of a socket still connecting would return at once.
    private func closeSocket(of core: ClientCore, _ socket: Int32) {
        mosquitto_disconnect(core.mosq)
        guard mosquitto_socket(core.mosq) == socket else { return }
        Glibc.shutdown(socket, Int32(SHUT_RDWR))
        // A TLS handshake's read never closes a dead socket (see `handshake`): the client's release does.
        let reads = core.usesTLS && core.isHandshaking ? 1 : Self.closeReadLimit
        for _ in 0..<reads where mosquitto_socket(core.mosq) == socket {
            mosquitto_loop_read(core.mosq, 1)
        }
    }

    private func finishStop(_ core: ClientCore, _ state: State) {
        // First, so that what the socket still delivers below reaches nobody.
        core.loopPhase = .stopped
        if core.loopFD >= 0 {
            let socket = core.loopFD
            epoll.remove(socket)
            if state.byFD[socket] === core { state.byFD[socket] = nil }
            core.loopFD = -1
            closeSocket(of: core, socket)
        }
        for (_, waiter) in core.loopSubscribeWaiters { waiter.continuation?.resume(throwing: MQTTError.shutDown) }
        core.loopSubscribeWaiters.removeAll()
        core.connected.store(false, ordering: .sequentiallyConsistent)
        core.cancelAllWaiters(with: .shutDown)
        state.clients[ObjectIdentifier(core)] = nil
        let waiters = core.loopStopWaiters
        core.loopStopWaiters.removeAll()
        for waiter in waiters { waiter() }
    }
}
