/// Every machine code the API puts in a problem+json answer. Clients (the CLI's catalogs) can
/// rely on this list being complete.
public enum ProblemCode: String, Sendable, Codable, CaseIterable {
    // Bad input (400, 413)
    case invalidRequest = "invalid_request"
    case invalidField = "invalid_field"
    case unknownField = "unknown_field"
    case malformedJSON = "malformed_json"
    case invalidID = "invalid_id"
    case weakPassword = "weak_password"
    case passwordUnchanged = "password_unchanged"
    case bodyTooLarge = "body_too_large"
    // Who you are (401, 403, 511)
    case unauthenticated
    case invalidCredentials = "invalid_credentials"
    case wrongPassword = "wrong_password"
    case passwordChangeRequired = "password_change_required"
    case adminRequired = "admin_required"
    case userDisabled = "user_disabled"
    case idTokenInvalid = "id_token_invalid"
    case noAccount = "no_account"
    case accessDenied = "access_denied"
    // Not there (404, 405)
    case userNotFound = "user_not_found"
    case roomNotFound = "room_not_found"
    case lockNotFound = "lock_not_found"
    case resourceNotFound = "resource_not_found"
    case routeNotFound = "route_not_found"
    case methodNotAllowed = "method_not_allowed"
    // Conflicts (409, 422)
    case emailTaken = "email_taken"
    case roomNameTaken = "room_name_taken"
    case lockIDTaken = "lock_id_taken"
    case importInProgress = "import_in_progress"
    case lastAdmin = "last_admin"
    case cannotDeleteSelf = "cannot_delete_self"
    case roomHasLocks = "room_has_locks"
    case lockRetired = "lock_retired"
    case noPassword = "no_password"
    /// An OpenID-Connect-only user where no issuer may sign in the company's users.
    case noOIDCIssuer = "no_oidc_issuer"
    case importRejected = "import_rejected"
    case notInPairingMode = "not_in_pairing_mode"
    case alreadyActivated = "already_activated"
    case setupCodeMismatch = "setup_code_mismatch"
    /// A factory device id (``LockID/hasFactoryForm``) registered without its setup code.
    case setupCodeRequired = "setup_code_required"
    // The lock, the broker and the server's capacity (502, 503, 504)
    case lockDenied = "lock_denied"
    case lockOffline = "lock_offline"
    case lockTimeout = "lock_timeout"
    case brokerUnavailable = "broker_unavailable"
    case serverBusy = "server_busy"
    /// The OpenID Connect issuer's keys could not be loaded: its sign-ins wait for them.
    case identityProviderUnavailable = "identity_provider_unavailable"
    // Too many requests from one client or user (429)
    case tooManyRequests = "too_many_requests"
    case tooManyDeniedUnlocks = "too_many_denied_unlocks"
    case tooManyUnlocks = "too_many_unlocks"
    case tooManyTakenEmails = "too_many_taken_emails"
    case tooManyTakenLockIDs = "too_many_taken_lock_ids"
    /// A company's admins gave too many wrong setup codes in a day (registering and activating locks).
    case tooManyWrongSetupCodes = "too_many_wrong_setup_codes"
    // The server (500)
    case internalError = "internal_error"
}
