/// Why a lock refused an `activate` or `challenge` (`{"op":"error","reason":…}`).
public enum LockErrorReason: String, Sendable, Equatable, CaseIterable {
    case notInPairingMode = "not_in_pairing_mode"
    case alreadyActivated = "already_activated"
    case notActivated = "not_activated"
}

/// Why a lock answered `{"op":"result","granted":false,"reason":…}`.
public enum DenialReason: String, Sendable, Equatable, CaseIterable {
    /// The response did not match the pending challenge.
    case badResponse = "bad_response"
    /// No challenge was pending for this `req` (never asked, already used, or replaced).
    case noPendingChallenge = "no_pending_challenge"
    /// The challenge was older than the lock's expiry.
    case expired = "expired"
    /// The lock is not (yet) activated: it opens for nobody.
    case notActivated = "not_activated"
}

/// The relay's position, reported in `state` events.
public enum RelayState: String, Sendable, Equatable {
    case locked
    case unlocked
}
