import LockProtocol
import UnlockITCore

/// The lock side of the protocol as a state machine: commands in, effects out.
///
/// It keeps the rules of protocol.md: one pending challenge, consumed by the first `respond` or
/// `confirm` whatever its outcome; a challenge expires after ``LockSettings/challengeLifetime``;
/// responses are compared in constant time; pairing answers only in pairing mode and only until the
/// server has confirmed it holds the key (an activated lock answers a later `confirm` so that a server
/// which lost the answer can finish); malformed commands are dropped and counted. It never opens
/// except for a correct, fresh `respond`, and forgets any challenge when the connection changes.
public struct LockDevice: Sendable {
    /// What the runtime must do after a command, in order.
    public enum Effect: Sendable, Equatable {
        /// Write the flash before anything else is sent (the activation confirmed by `req`). If the
        /// write fails, the runtime applies ``LockDevice/activationNotStored(req:)`` instead of the
        /// effects that follow.
        case persist(req: RequestID)
        /// Publish on the lock's `evt` topic.
        case publish(Event)
        /// Open the relay for ``LockSettings/openDuration``, then re-lock.
        case openRelay
        /// Republish the retained status (activation changed).
        case statusChanged
    }

    private struct PendingChallenge {
        let req: RequestID
        let nonce: Block128
        let expires: ContinuousClock.Instant
    }

    /// Which proof a command carries: the two differ (``ChallengeResponse``), so neither passes as the other.
    private enum Proof {
        case respond, confirm
    }

    public private(set) var flash: Flash
    public let settings: LockSettings
    public private(set) var counters = LockCounters()
    private var pairingUntil: ContinuousClock.Instant?
    /// Set once the lock has answered `activate` in this pairing session; cleared when pairing ends.
    private var pairingAnswered = false
    private var pending: PendingChallenge?

    public init(flash: Flash, settings: LockSettings = LockSettings()) {
        self.flash = flash
        self.settings = settings
    }

    public var lock: LockID { flash.lock }

    /// The button: pairing mode for ``LockSettings/pairingWindow``. An activated lock ignores it;
    /// it must be factory reset first.
    public mutating func enterPairingMode(now: ContinuousClock.Instant) {
        guard !flash.activated else { return }
        // A new pairing session once the last one ended: its `activate` answer does not carry over.
        if !isPairing(now: now) { pairingAnswered = false }
        pairingUntil = now + settings.pairingWindow
    }

    public func isPairing(now: ContinuousClock.Instant) -> Bool {
        guard !flash.activated, let until = pairingUntil else { return false }
        return now < until
    }

    /// Called on every connect and disconnect: a challenge never survives a connection.
    public mutating func connectionChanged() {
        pending = nil
    }

    /// Forgets the key and the activation (the flash must then be persisted).
    public mutating func factoryReset() {
        flash.factoryReset()
        pending = nil
        pairingUntil = nil
        pairingAnswered = false
    }

    /// Counts a payload that was dropped before it reached ``handle(_:now:)`` (e.g. oversized at the transport).
    public mutating func countMalformed() { counters.malformed += 1 }

    /// Handles one payload from the `cmd` topic.
    public mutating func handle(_ payload: [UInt8], now: ContinuousClock.Instant) -> [Effect] {
        let command: Command
        do {
            command = try Command.decode(payload)
        } catch {
            counters.malformed += 1
            return []
        }
        switch command {
        case .activate(let req):
            return activate(req: req, now: now)
        case .challenge(let req):
            return challenge(req: req, now: now)
        case .respond(let req, let response):
            return respond(req: req, response: response, now: now)
        case .confirm(let req, let response):
            return confirm(req: req, response: response, now: now)
        }
    }

    private mutating func activate(req: RequestID, now: ContinuousClock.Instant) -> [Effect] {
        if flash.activated { return [.publish(.error(req: req, reason: .alreadyActivated))] }
        guard isPairing(now: now) else { return [.publish(.error(req: req, reason: .notInPairingMode))] }
        pairingAnswered = true
        let (wrapped, kcv) = KeyWrap.wrap(flash.deviceKey, setupCode: flash.setupCode, lock: flash.lock)
        return [.publish(.activated(req: req, wrappedKey: wrapped, kcv: kcv))]
    }

    private mutating func challenge(req: RequestID, now: ContinuousClock.Instant) -> [Effect] {
        // Before activation a challenge is only for the pairing confirmation.
        guard flash.activated || (pairingAnswered && isPairing(now: now)) else {
            return [.publish(.error(req: req, reason: .notActivated))]
        }
        let nonce = Block128.random()
        pending = PendingChallenge(req: req, nonce: nonce, expires: now + settings.challengeLifetime)
        counters.challenges += 1
        return [.publish(.nonce(req: req, nonce: nonce))]
    }

    /// Consumes the pending challenge, whatever the outcome, and checks `response` against it as a `proof`.
    private mutating func takeChallenge(req: RequestID, response: Block128, as proof: Proof, now: ContinuousClock.Instant) -> DenialReason? {
        guard let challenge = pending else { return .noPendingChallenge }
        pending = nil
        guard challenge.req == req else { return .noPendingChallenge }
        guard now < challenge.expires else { return .expired }
        let expected =
            switch proof {
            case .respond: ChallengeResponse.compute(nonce: challenge.nonce, key: flash.deviceKey)
            case .confirm: ChallengeResponse.confirmation(nonce: challenge.nonce, key: flash.deviceKey)
            }
        guard response.constantTimeEquals(expected) else { return .badResponse }
        return nil
    }

    private mutating func respond(req: RequestID, response: Block128, now: ContinuousClock.Instant) -> [Effect] {
        var denial = takeChallenge(req: req, response: response, as: .respond, now: now)
        if denial == nil && !flash.activated { denial = .notActivated }
        if let denial {
            counters.denials += 1
            return [.publish(.result(req: req, granted: false, reason: denial))]
        }
        counters.openings += 1
        return [.publish(.result(req: req, granted: true, reason: nil)), .openRelay]
    }

    private mutating func confirm(req: RequestID, response: Block128, now: ContinuousClock.Instant) -> [Effect] {
        if flash.activated {
            // The server's proof after it lost this lock's answer to the confirmation that activated
            // it: checked as a `respond` is (with the confirmation's proof), answered, and nothing
            // else (no opening, no flash write).
            if let denial = takeChallenge(req: req, response: response, as: .confirm, now: now) {
                counters.denials += 1
                return [.publish(.result(req: req, granted: false, reason: denial))]
            }
            return [.publish(.result(req: req, granted: true, reason: nil))]
        }
        guard isPairing(now: now) else {
            pending = nil
            return [.publish(.error(req: req, reason: .notInPairingMode))]
        }
        if let denial = takeChallenge(req: req, response: response, as: .confirm, now: now) {
            counters.denials += 1
            return [.publish(.result(req: req, granted: false, reason: denial))]
        }
        flash.activated = true
        pairingUntil = nil
        pairingAnswered = false
        return [.persist(req: req), .publish(.result(req: req, granted: true, reason: nil)), .statusChanged]
    }

    /// The flash write of the activation confirmed by `req` failed: the lock is not activated after
    /// all (after a reboot its flash would say so, while the server would believe it active), and the
    /// server is told the confirmation did not take. Pairing needs the button again.
    public mutating func activationNotStored(req: RequestID) -> [Effect] {
        flash.activated = false
        return [.publish(.result(req: req, granted: false, reason: .notActivated))]
    }
}
