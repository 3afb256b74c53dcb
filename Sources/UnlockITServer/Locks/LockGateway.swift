import Foundation
import LockProtocol
import Logging
import MQTT
import Synchronization
import UnlockITCore

/// What the gateway needs from the broker connection; ``MQTTClient`` provides it, tests may fake it.
public protocol CommandLink: Sendable {
    var isConnected: Bool { get }
    func publish(topic: String, payload: [UInt8], qos: QoS, retain: Bool) throws(MQTTError)
    /// Runs `action` after `delay`, on the thread that delivers the link's messages.
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void)
}

extension MQTTClient: CommandLink {}

/// The server's side of the lock protocol: activation and challenge–response unlocks over MQTT.
///
/// Requests and answers are matched by `req`, and an answer counts only if it arrives on the `evt`
/// topic of the lock that was asked (a lock may publish only on its own topics, so one lock cannot
/// answer for another). The challenges of one lock go out one at a time (see ``Turn``); different
/// locks run in parallel. Every wait is bounded: a lock that does not answer within the timeout
/// gives `lock_timeout`, and one whose last will announced it offline gives `lock_offline` at once.
public final class LockGateway: Sendable {
    enum Reply: Sendable {
        case event(Event)
        case timeout
        case offline
        case brokerUnavailable
    }

    private struct Waiter {
        let lock: LockID
        let continuation: CheckedContinuation<Reply, Never>
        /// For an unlock: turns the lock's nonce into the `respond` to send at once, on the MQTT
        /// thread that received it, and keeps waiting (same `req`) for the result.
        var onNonce: (@Sendable (Block128) -> Command)?
        /// For an unlock: after this instant a nonce is no longer answered (see ``respondMargin``).
        var respondBy: ContinuousClock.Instant?
        /// Past the nonce step (its `respond` or `confirm` sent): another `nonce` with this `req` is a
        /// duplicate (a lock's answer repeated, or one replayed onto its topic), not the answer, and is dropped.
        var pastNonce: Bool
        /// For an unlock: called if the lock grants it after the wait timed out (see ``LateWatch``).
        var onLateGrant: (@Sendable () -> Void)?
        /// For an unlock: runs on the MQTT thread once its `respond` has been handed to the broker.
        var afterAnswer: (@Sendable () -> Void)?
    }

    /// Unlocks that timed out after their `respond` was sent: the lock may still open and say so.
    /// Such a grant is reported, not dropped, for ``lateGrantWindow`` after the timeout.
    private struct LateWatch {
        let lock: LockID
        let onGrant: @Sendable () -> Void
    }

    private let link: any CommandLink
    private let waiters = Mutex<[RequestID: Waiter]>([:])
    /// Always taken inside `waiters` when both are needed, never the other way round.
    private let lateWatches = Mutex<[RequestID: LateWatch]>([:])
    /// Commands go at QoS 0 (docs/protocol.md, "Transport"): each is worth something only within its
    /// request's bounded wait, and a client library must never send one again after a reconnect.
    static let commandQoS = QoS.atMostOnce
    /// A lock drops a challenge 5 s after issuing it (protocol.md), so its grant comes within 5 s of
    /// the `respond`; twice that leaves room for the broker.
    static let lateGrantWindow: Duration = .seconds(10)
    private let serializer = KeyedSerializer<LockID>()
    let presence = PresenceTracker()
    /// A lock's online and offline lines: one that connects and drops over and over must not flood
    /// the log (the count of online locks, a gauge, follows every change all the same).
    private let presenceLines = LogBudget<LockID>(perMinute: 10)
    /// Every lock's messages come through the server's one connection: what a lock sends unasked is
    /// counted against its budget (``ServerConfiguration/lockMessagesPerMinute``).
    private let messageBudget: RateLimiter<LockID>
    /// Raised for a lock whenever its broker account is another's from then on: an admin's new
    /// password, a registration, a retirement. A flood reported before is no longer this account's.
    private let accountGenerations = Mutex<[LockID: (generation: UInt64, graceUntil: ContinuousClock.Instant?)]>([:])
    /// For this long after an admin gave a lock's account a new password, nothing it sends is
    /// counted: what the old password's holder left queued at the broker or in the server's socket
    /// arrives then, and must not spend the new account's budget (and have the password the admin
    /// was just shown shut off).
    private let accountGrace: Duration
    /// A lock whose account sent more than its budget, and which of its accounts it was
    /// (``accountGeneration(_:)``).
    public struct FloodReport: Sendable, Equatable {
        public let lock: LockID
        public let generation: UInt64
    }
    /// The first refusal of each lock in a minute, for ``LockFloodGuard`` to shut the account off.
    public let floods: AsyncStream<FloodReport>
    private let floodsContinuation: AsyncStream<FloodReport>.Continuation
    private let timeout: Duration
    /// An unlock answers the lock's nonce only while at least this much of its time is left, so that
    /// the result comes back before the client is told `lock_timeout` (a tenth of the timeout).
    private var respondMargin: Duration { timeout / 10 }
    private let metrics: ServerMetrics
    private let logger: Logger

    /// Whether the server may command the locks: connected is not enough until the broker has
    /// given the server's account its role (``BrokerLink``); before, the broker drops its commands.
    private let isReady: @Sendable () -> Bool

    /// Dates presence (``LockPresence/lastSeen``): the clock the controllers date locks by, so that
    /// a presence is compared with a lock's registration on one time line (``Store/recordPresence(_:)``).
    private let clock: ServerClock

    public init(
        link: any CommandLink, timeout: Duration, metrics: ServerMetrics, logger: Logger, clock: ServerClock,
        messagesPerLockPerMinute: Int = ServerConfiguration().lockMessagesPerMinute, accountGrace: Duration = .seconds(5),
        isReady: @escaping @Sendable () -> Bool = { true }
    ) {
        self.link = link
        messageBudget = RateLimiter(perMinute: messagesPerLockPerMinute)
        self.accountGrace = accountGrace
        // Newest kept: one lock named a minute is all a flood can add, and the guard handles each at once.
        (floods, floodsContinuation) = AsyncStream.makeStream(of: FloodReport.self, bufferingPolicy: .bufferingNewest(10_000))
        self.clock = clock
        self.isReady = isReady
        self.timeout = timeout
        self.metrics = metrics
        self.logger = logger
    }

    public var isConnected: Bool { link.isConnected }

    /// Whether the lock's retained status says it is connected.
    public func isOnline(_ lock: LockID) -> Bool { presence.isOnline(lock) }

    public func presence(of lock: LockID) -> LockPresence? { presence.presence(lock) }

    /// The broker disconnected the lock on the server's behalf (its password changed). mosquitto does
    /// that without the lock's last will, so no offline status comes: the lock is offline from here
    /// until its next status says otherwise. The server writes the will's offline status itself, so
    /// that the retained status does not say online to whoever reads it next (this server, after a
    /// restart or a reconnect, among them).
    public func brokerDisconnected(_ lock: LockID) {
        took(lock, online: false, changed: presence.disconnected(lock, now: clock.now()))
        retainStatus(of: lock, LockStatus(online: false).encoded())
    }

    /// An admin gave the lock's account a new password: disconnected as by ``brokerDisconnected(_:)``,
    /// and its message budget is full again, since whoever spent it (``floods``) no longer holds the
    /// password. Else the device given the new one could find its first status dropped.
    public func passwordRenewed(_ lock: LockID) {
        brokerDisconnected(lock)
        newAccount(lock, graceUntil: .now + accountGrace)
    }

    /// Which of the lock's broker accounts is the current one, counted from 0 (``FloodReport``).
    public func accountGeneration(_ lock: LockID) -> UInt64 { accountGenerations.withLock { $0[lock]?.generation ?? 0 } }

    /// The lock's account is another's from now on: a full budget (after `graceUntil`, if given), and
    /// floods reported before are stale.
    private func newAccount(_ lock: LockID, graceUntil: ContinuousClock.Instant? = nil) {
        accountGenerations.withLock { $0[lock] = (($0[lock]?.generation ?? 0) &+ 1, graceUntil) }
        messageBudget.forget(lock)
    }

    /// The lock was retired and its broker account deleted, which disconnects it without its will.
    /// Its waiting exchanges end as offline, and its retained status is cleared (an empty retained
    /// message), since the lock will never write one again. What is known of its presence goes too:
    /// nothing shows a retired lock's, and the store writes none into a retired lock's row.
    public func retired(_ lock: LockID) {
        took(lock, online: false, changed: presence.disconnected(lock, now: clock.now()))
        presence.forget(lock)
        presenceLines.forget(lock)
        newAccount(lock)
        retainStatus(of: lock, [])
    }

    /// The lock was registered (perhaps the id of a retired one, registered again by its company):
    /// nothing known of a device of this id before holds, and a retained status left at the broker
    /// (its clearing at retirement is not acknowledged) is stale, since no device could connect as
    /// this lock before its new account existed. Both go.
    public func registered(_ lock: LockID) {
        presence.forget(lock)
        presenceLines.forget(lock)
        newAccount(lock)
        retainStatus(of: lock, [])
    }

    /// Writes (or, empty, clears) the lock's retained status. At QoS 0: sent again after a reconnect,
    /// as QoS 1 would be, a stale offline status could land after the lock's own online one.
    /// Lost, it leaves what the broker had before, which the lock's next status replaces.
    private func retainStatus(of lock: LockID, _ payload: [UInt8]) {
        do {
            try link.publish(topic: Topics.status(lock), payload: payload, qos: .atMostOnce, retain: true)
        } catch {
            logger.warning("could not write the lock's retained status", metadata: ["lock": "\(lock)", "error": "\(error)"])
        }
    }

    /// After the presence tracker took in a lock's presence (from its status, or as the server knows
    /// it): logs and counts a change, and an offline lock answers its waiting exchanges at once.
    private func took(_ lock: LockID, online: Bool, changed: Bool) {
        if changed {
            if let line = presenceLines.take(lock, now: .now) {
                var metadata: Logger.Metadata = ["lock": "\(lock)"]
                if line.unloggedBefore > 0 { metadata["unlogged"] = "\(line.unloggedBefore)" }
                let message: Logger.Message = "lock \(online ? "online" : "offline")"
                logger.info(line.spendsTheBudget ? "\(message); its further changes this minute are not logged" : message, metadata: metadata)
            }
            metrics.locksOnline(presence.onlineCount)
        }
        if !online { failWaiters(of: lock, with: .offline) }
    }

    // MARK: - Unlock

    /// Runs challenge → respond → result with the lock's key. The access rule must already have allowed it.
    ///
    /// `onLateGrant` runs (on the MQTT thread) if the outcome was `lockTimeout` but the lock then
    /// reports it opened after all: the door's record must not miss an opening.
    public func unlock(_ lock: LockID, key: Key128, onLateGrant: @escaping @Sendable () -> Void = {}) async -> UnlockOutcome {
        guard link.isConnected, isReady() else { return .brokerUnavailable }
        guard presence.isOnline(lock) else { return .lockOffline }
        let deadline = ContinuousClock.now + timeout
        guard await serializer.acquire(lock, deadline: deadline) else { return .lockTimeout }
        // The lock's turn passes on as soon as this unlock's `respond` is handed to the broker (or
        // when the unlock ends without one), not when its result comes back: see ``Turn``.
        let turn = Turn { [serializer] in serializer.release(lock) }
        defer { turn.pass() }
        // The turn may come (behind other unlocks of this lock) when there is no time left to ask.
        guard ContinuousClock.now < deadline - respondMargin else { return .lockTimeout }
        // The lock may have gone offline while this unlock waited for its turn.
        guard presence.isOnline(lock) else { return .lockOffline }

        // The respond goes out from the MQTT thread the moment the nonce arrives: one hop less
        // each way than coming back to this task between the two exchanges.
        let req = RequestID.random()
        let reply = await exchange(
            .challenge(req: req), with: lock, deadline: deadline, respondBy: deadline - respondMargin, onLateGrant: onLateGrant,
            afterAnswer: turn.pass
        ) { nonce in
            .respond(req: req, response: ChallengeResponse.compute(nonce: nonce, key: key))
        }
        switch reply {
        case .event(.result(_, true, _)): return .granted
        case .event: return .lockDenied
        case .timeout: return .lockTimeout
        case .offline: return .lockOffline
        case .brokerUnavailable: return .brokerUnavailable
        }
    }

    // MARK: - Activation

    /// Pairs with a lock in pairing mode: asks for its wrapped key, unwraps it with the admin's setup
    /// code (a wrong code throws ``ActivationFailure/setupCodeMismatch`` and leaves the lock pairable),
    /// gives the key to `hold` (which must store it before the lock can commit), then proves
    /// possession of the key with a `confirm` so the lock marks itself activated. Returns the device
    /// key, which the caller seals and stores.
    ///
    /// A lock that answers `already_activated` may be one an earlier attempt activated without
    /// hearing back (its `result` lost or late). With that attempt's `pending` key, and the setup code
    /// it was unwrapped with, the lock is asked to prove it holds the key (`confirm` on a fresh
    /// challenge, which an activated lock answers without opening) and the activation completes.
    ///
    /// `pending` is read only once this attempt has the lock's turn, so that an attempt that waited
    /// behind another sees the key that one held.
    ///
    /// Throws an ``ActivationFailure``, or what `hold` throws (then nothing was sent after `activate`).
    public func activate(
        _ lock: LockID, setupCode: SetupCode, pending: () async throws -> PendingPairing?,
        hold: @Sendable (PendingPairing) async throws -> Void
    ) async throws -> Key128 {
        guard link.isConnected, isReady() else { throw ActivationFailure.brokerUnavailable }
        guard presence.isOnline(lock) else { throw ActivationFailure.lockOffline }
        // Three exchanges: allow each the unlock timeout.
        let deadline = ContinuousClock.now + timeout * 3
        guard await serializer.acquire(lock, deadline: deadline) else { throw ActivationFailure.lockTimeout }
        defer { serializer.release(lock) }
        guard presence.isOnline(lock) else { throw ActivationFailure.lockOffline }

        let key: Key128
        let resuming: Bool
        switch await exchange(.activate(req: RequestID.random()), with: lock, deadline: deadline) {
        case .event(.activated(_, let wrapped, let kcv)):
            guard let unwrapped = KeyWrap.unwrap(wrapped, kcv: kcv, setupCode: setupCode, lock: lock) else {
                throw ActivationFailure.setupCodeMismatch
            }
            try await hold(PendingPairing(key: unwrapped, wrappedKey: wrapped))
            (key, resuming) = (unwrapped, false)
        case .event(.error(_, .alreadyActivated)):
            guard let pending = try await pending() else { throw ActivationFailure.alreadyActivated }
            guard pending.matches(setupCode, lock: lock) else { throw ActivationFailure.setupCodeMismatch }
            (key, resuming) = (pending.key, true)
        case .event(.error(_, .notInPairingMode)): throw ActivationFailure.notInPairingMode
        case .event: throw ActivationFailure.lockDenied
        case let other: throw Self.failure(other)
        }

        let req = RequestID.random()
        let nonce: Block128
        switch await exchange(.challenge(req: req), with: lock, deadline: deadline) {
        case .event(.nonce(_, let value)): nonce = value
        case .event(.error(_, .alreadyActivated)): throw ActivationFailure.alreadyActivated
        // A lock not activated takes a challenge only inside the pairing window it answered `activate`
        // in: the window closed (or the lock restarted) in between, and the button is needed again.
        case .event(.error(_, .notInPairingMode)), .event(.error(_, .notActivated)): throw ActivationFailure.notInPairingMode
        case .event: throw ActivationFailure.lockDenied
        case let other: throw Self.failure(other)
        }
        switch await exchange(.confirm(req: req, response: ChallengeResponse.confirmation(nonce: nonce, key: key)), with: lock, deadline: deadline) {
        case .event(.result(_, true, _)): return key
        // The proof reached the lock after its challenge had lapsed (a stall of seconds on the way):
        // nothing was decided, and the next attempt can finish.
        case .event(.result(_, false, .expired)): throw ActivationFailure.lockTimeout
        // Resuming, a wrong proof means the lock was activated with another key.
        case .event(.result(_, false, .badResponse)) where resuming: throw ActivationFailure.alreadyActivated
        case .event(.error(_, .alreadyActivated)): throw ActivationFailure.alreadyActivated
        case .event(.error(_, .notInPairingMode)): throw ActivationFailure.notInPairingMode
        case .event: throw ActivationFailure.lockDenied
        case let other: throw Self.failure(other)
        }
    }

    private static func failure(_ reply: Reply) -> ActivationFailure {
        switch reply {
        case .timeout: .lockTimeout
        case .offline: .lockOffline
        case .brokerUnavailable: .brokerUnavailable
        case .event: .lockDenied
        }
    }

    // MARK: - Request and answer

    /// Publishes `command` and waits for the answer with the same `req` from the same lock. With
    /// `onNonce`, a `nonce` answer is not returned but answered at once with the command it makes,
    /// and the wait goes on for the answer to that.
    private func exchange(
        _ command: Command, with lock: LockID, deadline: ContinuousClock.Instant, respondBy: ContinuousClock.Instant? = nil,
        onLateGrant: (@Sendable () -> Void)? = nil, afterAnswer: (@Sendable () -> Void)? = nil, onNonce: (@Sendable (Block128) -> Command)? = nil
    ) async -> Reply {
        let req = command.req
        return await withCheckedContinuation { continuation in
            let pastNonce = if case .confirm = command { true } else { false }
            waiters.withLock {
                $0[req] = Waiter(
                    lock: lock, continuation: continuation, onNonce: onNonce, respondBy: respondBy, pastNonce: pastNonce, onLateGrant: onLateGrant,
                    afterAnswer: afterAnswer)
            }
            // The lock's offline status may have come in since the caller checked, before this
            // waiter was there to be told (``failWaiters(of:with:)``): now that it is, ask again.
            guard presence.isOnline(lock) else {
                finish(req, with: .offline)
                return
            }
            // A timer on the MQTT thread, not a task per request: if the answer came first, the
            // request id is gone and the timer finds nothing to do.
            link.schedule(after: ContinuousClock.now.duration(to: deadline)) { [weak self] in self?.finish(req, with: .timeout) }
            do {
                try link.publish(topic: Topics.command(lock), payload: command.encoded(), qos: Self.commandQoS, retain: false)
            } catch {
                finish(req, with: .brokerUnavailable)
            }
        }
    }

    private enum Next {
        case ignore
        case resume(Waiter)
        case answer(Block128, @Sendable (Block128) -> Command, LockID, (@Sendable () -> Void)?)
    }

    /// Ends or advances the exchange `req` with `reply`; whether it did (or a late grant was recorded).
    @discardableResult
    private func finish(_ req: RequestID, with reply: Reply, from lock: LockID? = nil) -> Bool {
        let next = waiters.withLock { waiters -> Next in
            guard var waiter = waiters[req] else { return .ignore }
            if let lock, waiter.lock != lock { return .ignore }
            if case .event(.nonce(_, let nonce)) = reply {
                if waiter.pastNonce { return .ignore }
                if let onNonce = waiter.onNonce {
                    // Too late to answer: the lock's challenge expires unused and the timeout ends
                    // the unlock, rather than a door opening after the client was told it timed out.
                    if let respondBy = waiter.respondBy, ContinuousClock.now >= respondBy { return .ignore }
                    // Only once: the lock's next answer must be the result.
                    waiter.onNonce = nil
                    waiter.pastNonce = true
                    waiters[req] = waiter
                    return .answer(nonce, onNonce, waiter.lock, waiter.afterAnswer)
                }
            }
            // A `result` answers a `respond`, and none has gone out before the nonce: whoever sends
            // one then (a lock's leaked credentials answering `challenge` with `granted`) is not
            // the protocol, and an unlock never ends as opened on it.
            if case .event(.result) = reply, waiter.onNonce != nil { return .ignore }
            waiters[req] = nil
            if case .timeout = reply { watchForLateGrant(req, of: waiter) }
            return .resume(waiter)
        }
        switch next {
        case .ignore:
            guard let lock else { return false }
            if case .event(.result(_, let granted, _)) = reply, lateResult(req, granted: granted, from: lock) { return true }
            metrics.unexpectedMessage()
            return false
        case .resume(let waiter):
            waiter.continuation.resume(returning: reply)
            return true
        case .answer(let nonce, let makeCommand, let lock, let afterAnswer):
            do {
                try link.publish(topic: Topics.command(lock), payload: makeCommand(nonce).encoded(), qos: Self.commandQoS, retain: false)
            } catch {
                finish(req, with: .brokerUnavailable)
                return true
            }
            afterAnswer?()
            return true
        }
    }

    /// An unlock ended without its result after its `respond` went out (it timed out, or the lock was
    /// reported offline): the lock may still have opened, and a `granted` result arriving within
    /// ``lateGrantWindow`` is recorded rather than dropped, since the door's record must not miss an
    /// opening.
    private func watchForLateGrant(_ req: RequestID, of waiter: Waiter) {
        guard waiter.pastNonce, let onGrant = waiter.onLateGrant else { return }
        lateWatches.withLock { $0[req] = LateWatch(lock: waiter.lock, onGrant: onGrant) }
        link.schedule(after: Self.lateGrantWindow) { [weak self] in _ = self?.lateWatches.withLock { $0.removeValue(forKey: req) } }
    }

    /// A result for an unlock that already ended without one; false if none was being watched for.
    private func lateResult(_ req: RequestID, granted: Bool, from lock: LockID) -> Bool {
        let watch = lateWatches.withLock { watches -> LateWatch? in
            guard let watch = watches[req], watch.lock == lock else { return nil }
            watches[req] = nil
            return watch
        }
        guard let watch else { return false }
        if granted {
            logger.warning("a lock opened after its unlock had timed out", metadata: ["lock": "\(lock)"])
            metrics.lateGrant()
            watch.onGrant()
        }
        return true
    }

    // MARK: - Incoming messages (MQTT event loop thread)

    /// Handles a message from a lock's `evt` or `status` topic. What the lock sends unasked (statuses,
    /// relay states, malformed events, answers to nothing waiting) counts against its budget; the
    /// answers that take an exchange of the server's a step further do not, since the server's own
    /// requests bound them. A status over the budget is dropped, and the first message over it in a
    /// minute names the lock in ``floods``.
    public func handle(_ message: MQTTMessage) {
        guard let (lock, kind) = Topics.parse(message.topic) else { return }
        let now = clock.now()
        switch kind {
        case .status:
            guard admitUnasked(lock) else { return }
            // An empty retained message only clears the topic.
            guard !message.payload.isEmpty else { return }
            guard let status = try? LockStatus.decode(message.payload) else {
                metrics.malformedMessage()
                logger.debug("dropped a malformed status", metadata: ["lock": "\(lock)"])
                return
            }
            let changed = presence.status(lock, online: status.online, firmware: status.firmware, now: now)
            took(lock, online: status.online, changed: changed)
        case .event:
            presence.seen(lock, now: now)
            let event: Event
            do {
                event = try Event.decode(message.payload)
            } catch {
                metrics.malformedMessage()
                logger.debug("dropped a malformed event", metadata: ["lock": "\(lock)", "error": "\(error)"])
                admitUnasked(lock)
                return
            }
            if let req = event.req, finish(req, with: .event(event), from: lock) { return }
            // Relay state changes (they need no answer), and answers no exchange was waiting for.
            admitUnasked(lock)
        case .command:
            return
        }
    }

    /// Counts one message the lock sent unasked; false, and the lock reported once a minute, when
    /// its budget is spent.
    @discardableResult
    private func admitUnasked(_ lock: LockID) -> Bool {
        let now = ContinuousClock.now
        if let until = accountGenerations.withLock({ $0[lock]?.graceUntil }), now < until { return true }
        guard let refusal = messageBudget.take(lock, now: now) else { return true }
        metrics.messageOverBudget()
        if refusal.isFirstInAMinute { floodsContinuation.yield(FloodReport(lock: lock, generation: accountGeneration(lock))) }
        return false
    }

    /// The server lost or regained its own broker connection.
    public func brokerConnectionChanged(connected: Bool) {
        // Until the retained statuses arrive again, no lock is known to be online.
        presence.markAllOffline()
        metrics.locksOnline(0)
        if !connected {
            let all = waiters.withLock { waiters -> [Waiter] in
                defer { waiters.removeAll() }
                return Array(waiters.values)
            }
            for waiter in all { waiter.continuation.resume(returning: .brokerUnavailable) }
        }
    }

    private func failWaiters(of lock: LockID, with reply: Reply) {
        let affected = waiters.withLock { waiters -> [Waiter] in
            let keys = waiters.filter { $0.value.lock == lock }.map(\.key)
            var removed: [Waiter] = []
            for key in keys {
                guard let waiter = waiters.removeValue(forKey: key) else { continue }
                watchForLateGrant(key, of: waiter)
                removed.append(waiter)
            }
            return removed
        }
        for waiter in affected { waiter.continuation.resume(returning: reply) }
    }

    /// Presence changes to persist (see ``PresenceTracker/takeChanges(now:)``).
    func takePresenceChanges() -> [LockPresence] { presence.takeChanges(now: clock.now()) }
}

/// An unlock's hold on its lock, passed on exactly once.
///
/// A lock keeps one pending challenge, so the next unlock of the same lock may send its
/// `challenge` only once this one's `respond` is on its way: the broker delivers one client's
/// messages on one topic in order, so the lock reads the `respond` (which consumes its pending
/// challenge) before the next `challenge`. Waiting for the `result` as well would add a whole
/// round trip through the broker to every unlock queued behind another of the same door.
final class Turn: Sendable {
    private let passed = Atomic<Bool>(false)
    private let release: @Sendable () -> Void

    init(_ release: @escaping @Sendable () -> Void) { self.release = release }

    @Sendable func pass() {
        guard !passed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        release()
    }
}
