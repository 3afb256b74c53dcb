import Foundation

/// What an admin's write checks again in its own transaction when it commits after slow work: a
/// password hashed for a new user or a reset takes a third of a second, and an import of many users
/// minutes. The admin may have been demoted or disabled, or their session revoked, in between; the
/// write then fails with ``StoreError/sessionEnded`` or ``StoreError/adminRequired`` and nothing
/// is written.
public struct AdminCheck: Sendable {
    /// The SHA-256 of the request's bearer token.
    public var session: [UInt8]
    public var company: CompanyID
    /// When the write happens: a session that expired by then no longer counts.
    public var at: Date
    /// False for a user's change of their own (a new password): the session and the user must still
    /// be valid and enabled, whatever the role.
    public var needsAdmin: Bool

    public init(session: [UInt8], company: CompanyID, at: Date, needsAdmin: Bool = true) {
        self.session = session
        self.company = company
        self.at = at
        self.needsAdmin = needsAdmin
    }
}
