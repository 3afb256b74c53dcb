/// Every reason the server writes into an audit event (and, for access and lock outcomes, into an
/// answer). Clients can rely on this list being complete; a client that meets an unknown one shows
/// the code itself.
public enum AuditReason: String, Sendable, Codable, CaseIterable {
    // The access rule (AccessReason)
    case levelSufficient = "level_sufficient"
    case authorizedUser = "authorized_user"
    case otherCompany = "other_company"
    case userDisabled = "user_disabled"
    case lockInactive = "lock_inactive"
    case levelTooLow = "level_too_low"
    case notAuthorized = "not_authorized"
    // The lock and the broker
    case granted
    /// The lock opened after the client had been told `lock_timeout` or `lock_offline` (a second
    /// event for that unlock).
    case grantedLate = "granted_late"
    case lockOffline = "lock_offline"
    case lockTimeout = "lock_timeout"
    case lockDenied = "lock_denied"
    case brokerUnavailable = "broker_unavailable"
    case lockNotFound = "lock_not_found"
    case keyUnavailable = "key_unavailable"
    /// The lock's broker account sent more messages than its budget allows, and the server gave it a
    /// password nobody holds (``AuditAction/resetLockPassword``, no actor).
    case messageFlood = "message_flood"
    // Pairing
    case notInPairingMode = "not_in_pairing_mode"
    case alreadyActivated = "already_activated"
    case setupCodeMismatch = "setup_code_mismatch"
    /// A lock's hold on its device id lapsed, and another company registered the id (``AuditAction/releaseLock``).
    case registeredElsewhere = "registered_elsewhere"
    /// The server's operator released the lock's device id (``AuditAction/releaseLock``, `unlockit-server release-lock`).
    case releasedByOperator = "released_by_operator"
    /// The operator kept the released id for this company (``AuditAction/reserveLockID``).
    case releasedToCompany = "released_to_company"
    // Sign-in and passwords
    case password
    case oidc
    case wrongPassword = "wrong_password"
    /// Sign-ins, password changes or unlocks paused after too many failures or denials.
    case throttled
    /// Unlocks paused for a user over their rate of attempts, whatever the attempts' outcomes.
    case rateLimited = "rate_limited"
    case resetByAdmin = "reset_by_admin"
    /// An OpenID Connect issuer not configured for the user's company vouched for them.
    case issuerNotTrusted = "issuer_not_trusted"
    /// An OpenID Connect ID token that had already signed someone in was presented again.
    case idTokenReused = "id_token_reused"
    /// An ID token of another account at its issuer than the one the user is linked to there, or of
    /// one linked to another user (``OIDCIdentity``).
    case identityMismatch = "identity_mismatch"
    // Admin changes
    /// The admin was signed out, disabled or demoted while their change ran, and it was not finished
    /// (what a device already did, such as a lock taking its key, stays done).
    case adminSessionEnded = "admin_session_ended"
    case `import`

    public init(_ access: AccessReason) { self = AuditReason(rawValue: access.rawValue)! }
}
