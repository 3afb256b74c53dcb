import UnlockITCore

/// How an unlock ended once the access rule had allowed it. The raw values are API codes.
public enum UnlockOutcome: String, Sendable, Equatable, CaseIterable {
    /// The lock verified the response and opened.
    case granted
    /// The lock is not connected to the broker; nothing was sent.
    case lockOffline = "lock_offline"
    /// The lock did not answer in time.
    case lockTimeout = "lock_timeout"
    /// The lock answered but refused (its key differs, it was reset, …).
    case lockDenied = "lock_denied"
    /// The server itself is not connected to the broker.
    case brokerUnavailable = "broker_unavailable"
}

extension UnlockOutcome {
    var auditReason: AuditReason {
        switch self {
        case .granted: .granted
        case .lockOffline: .lockOffline
        case .lockTimeout: .lockTimeout
        case .lockDenied: .lockDenied
        case .brokerUnavailable: .brokerUnavailable
        }
    }
}

/// Why an activation failed. The raw values are API codes.
public enum ActivationFailure: String, Error, Sendable, Equatable, CaseIterable {
    case lockOffline = "lock_offline"
    case lockTimeout = "lock_timeout"
    case brokerUnavailable = "broker_unavailable"
    /// The lock is not in pairing mode (its button was not pressed).
    case notInPairingMode = "not_in_pairing_mode"
    /// The lock is already activated; factory reset it to pair again.
    case alreadyActivated = "already_activated"
    /// The setup code does not match the lock's: nothing was stored, and the lock can be activated again.
    case setupCodeMismatch = "setup_code_mismatch"
    /// The lock did not accept the pairing confirmation.
    case lockDenied = "lock_denied"
}

extension ActivationFailure {
    var auditReason: AuditReason {
        switch self {
        case .lockOffline: .lockOffline
        case .lockTimeout: .lockTimeout
        case .brokerUnavailable: .brokerUnavailable
        case .notInPairingMode: .notInPairingMode
        case .alreadyActivated: .alreadyActivated
        case .setupCodeMismatch: .setupCodeMismatch
        case .lockDenied: .lockDenied
        }
    }
}
