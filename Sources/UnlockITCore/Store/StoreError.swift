/// Why the store refused a change. The server turns these into problem+json answers.
public enum StoreError: Error, Sendable, Equatable {
    /// The thing to change does not exist in the caller's company.
    case notFound
    /// An email address is already in use (emails are unique across companies).
    case emailTaken
    /// A room of that name already exists in the company.
    case roomNameTaken
    /// A lock with that device id is already registered (device ids are global: they are MQTT accounts).
    case lockIDTaken
    /// The change would leave the company without an enabled admin.
    case lastAdmin
    /// The room still has locks that are not retired.
    case roomHasLocks
    /// The lock is retired: it can be neither activated nor retired again.
    case lockRetired
    /// The room a change names does not exist in the caller's company.
    case roomNotFound
    /// The password hash a sign-in or password change verified against, or the account itself, has
    /// changed (or gone) since: what began before the change must not finish after it.
    case credentialsChanged
    /// The user was disabled since the request checked it.
    case userDisabled
    /// The user signs in with OpenID Connect only: they have no password for an admin to replace.
    case noPassword
    /// The ID token has signed someone in before (``SpentIDToken``).
    case idTokenSpent
    /// The ID token speaks for another account at its issuer than the one the user is linked to there,
    /// or for one linked to another user (``OIDCIdentity``).
    case identityMismatch
    /// The request's session ended (revoked, expired, its user deleted or disabled) while it ran.
    case sessionEnded
    /// The request's user is no longer an admin.
    case adminRequired
}
