import Foundation

/// What an audit event records.
public enum AuditAction: String, Sendable, Codable, CaseIterable {
    case unlock
    case activateLock = "activate_lock"
    case registerLock = "register_lock"
    case retireLock = "retire_lock"
    /// A lock not in service (registered and never activated, or retired) went to another company,
    /// which registered its device id once the lock's hold on it had lapsed (``LockIDClaim``). No
    /// actor: the event is the losing company's, and does not say who took the lock.
    case releaseLock = "release_lock"
    /// The server's operator released a device id from the company that held it, and keeps it for
    /// this company until it registers the id, for the lock id lapse at most (`unlockit-server
    /// release-lock --to`). No actor: the event is the keeping company's, and does not name the holder.
    case reserveLockID = "reserve_lock_id"
    /// A lock renamed or moved to another room.
    case updateLock = "update_lock"
    /// A lock's broker account was given a new password (the old one stops working at once).
    case resetLockPassword = "reset_lock_password"
    case signIn = "sign_in"
    case signOut = "sign_out"
    case changePassword = "change_password"
    /// An admin forgot a user's links to accounts at OpenID Connect issuers (``OIDCIdentity``): the
    /// next sign-in at each issuer links them anew.
    case unlinkIdentities = "unlink_identities"
    case createUser = "create_user"
    case updateUser = "update_user"
    case deleteUser = "delete_user"
    case createRoom = "create_room"
    case updateRoom = "update_room"
    case deleteRoom = "delete_room"
    case authorizeUser = "authorize_user"
    case deauthorizeUser = "deauthorize_user"
    case createCompany = "create_company"
}

/// How it ended.
public enum AuditOutcome: String, Sendable, Codable, CaseIterable {
    /// Done: the door opened, the change was made, the sign-in succeeded.
    case success
    /// Refused: by the access rule, by the lock, or a failed sign-in.
    case denied
    /// Could not be carried out: the lock was offline or did not answer.
    case error
}

/// One line of the append-only audit log.
public struct AuditEvent: Sendable, Equatable {
    /// Its number in its company's log, assigned by the store: 1, 2, 3… in the log's order, counted
    /// per company, so that it says nothing of other companies' events; `0` before it is stored.
    public var id: Int64
    public var companyID: CompanyID
    public var at: Date
    /// Who did it; `nil` for an unauthenticated attempt (a failed sign-in of an unknown account).
    public var actorID: UserID?
    public var action: AuditAction
    public var lockID: LockID?
    public var roomID: RoomID?
    /// The user the action was about (the one created, changed, authorized…).
    public var subjectID: UserID?
    public var outcome: AuditOutcome
    /// A stable machine-readable reason, e.g. `level_too_low`, `granted`, `lock_timeout`.
    public var reason: String?
    /// For a user's or room's creation, update or deletion, a lock's update, and the registration
    /// that takes a retired lock's row over (its state, name and room before): the fields it set,
    /// with their values before and after (the store fills these in from the rows it writes).
    public var changes: [AuditChange]

    public init(
        id: Int64 = 0, companyID: CompanyID, at: Date, actorID: UserID?, action: AuditAction, lockID: LockID? = nil, roomID: RoomID? = nil,
        subjectID: UserID? = nil, outcome: AuditOutcome, reason: String? = nil, changes: [AuditChange] = []
    ) {
        self.id = id
        self.companyID = companyID
        self.at = at
        self.actorID = actorID
        self.action = action
        self.lockID = lockID
        self.roomID = roomID
        self.subjectID = subjectID
        self.outcome = outcome
        self.reason = reason
        self.changes = changes
    }
}

/// A filtered, paginated read of the audit log, newest first.
public struct AuditQuery: Sendable, Equatable {
    public var companyID: CompanyID
    /// Events whose actor or subject is this user.
    public var userID: UserID?
    public var lockID: LockID?
    public var roomID: RoomID?
    public var action: AuditAction?
    public var outcome: AuditOutcome?
    public var from: Date?
    public var to: Date?
    /// Only events numbered below this (the previous page's cursor, ``AuditEvent/id``).
    public var before: Int64?
    public var limit: Int

    public init(
        companyID: CompanyID, userID: UserID? = nil, lockID: LockID? = nil, roomID: RoomID? = nil, action: AuditAction? = nil,
        outcome: AuditOutcome? = nil, from: Date? = nil, to: Date? = nil, before: Int64? = nil, limit: Int = 100
    ) {
        self.companyID = companyID
        self.userID = userID
        self.lockID = lockID
        self.roomID = roomID
        self.action = action
        self.outcome = outcome
        self.from = from
        self.to = to
        self.before = before
        self.limit = limit
    }
}
