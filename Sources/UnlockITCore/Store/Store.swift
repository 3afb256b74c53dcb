import Foundation

/// Everything the server keeps, behind one small protocol so that a PostgreSQL implementation can
/// stand beside the embedded SQLite one.
///
/// Every read and write of company data is scoped by a company id: a row of another company is
/// reported exactly as a missing one. Changes made by an admin take their audit event as an argument
/// and commit it in the same transaction.
public protocol Store: Sendable {
    // MARK: Companies
    func createCompany(_ company: Company, admin: User, passwordHash: String, audit: AuditEvent) async throws
    func company(_ id: CompanyID) async throws -> Company?

    // MARK: Users
    /// `admin`, if given, is checked again in the write's transaction (``AdminCheck``).
    func createUser(_ user: User, passwordHash: String?, checking admin: AdminCheck?, audit: AuditEvent) async throws
    /// All or nothing: creates every user, or none if any email is taken (throws ``StoreError/emailTaken``)
    /// or `admin` no longer passes its check (``AdminCheck``).
    func createUsers(_ users: [(user: User, passwordHash: String?, audit: AuditEvent)], checking admin: AdminCheck?) async throws
    func user(_ id: UserID) async throws -> User?
    func user(_ id: UserID, in company: CompanyID) async throws -> User?
    /// The user with this (normalised) email and their password hash, for sign-in.
    func credentials(email: String) async throws -> (user: User, passwordHash: String?)?
    func users(in company: CompanyID) async throws -> [User]
    /// Applies `change` to the user as stored, in one write transaction (two admins editing
    /// different fields at once both keep their edit), and returns the user as saved; only the
    /// editable fields are kept (email, name, role, level, enabled, updatedAt). Refuses to leave the
    /// company without an enabled admin. A change that changes none of them writes nothing, no
    /// event and no new updatedAt, and returns the user as stored.
    func updateUser(
        _ id: UserID, in company: CompanyID, checking admin: AdminCheck?, audit: AuditEvent, change: (inout User) throws -> Void
    ) async throws -> User
    func deleteUser(_ id: UserID, in company: CompanyID, checking admin: AdminCheck?, audit: AuditEvent) async throws
    /// Sets a new password hash, and revokes every session of the user except `keepSession`.
    /// With `replacing`, only if the stored hash is still that one (the one the user's current
    /// password was just verified against; else ``StoreError/credentialsChanged``); with `admin`,
    /// only if that admin still passes ``AdminCheck``. A user not of `company` is ``StoreError/notFound``.
    /// Without `replacing` (an admin's reset), a user who has no password (OpenID Connect only) is
    /// ``StoreError/noPassword``: a reset does not give them one.
    func setPassword(
        _ id: UserID, in company: CompanyID, hash: String, mustChange: Bool, keepSession: [UInt8]?, replacing: String?,
        checking admin: AdminCheck?, audit: AuditEvent) async throws
    /// Stores a new hash of the same password (made at the current bcrypt cost) if the stored one is
    /// still `replacing`; sessions, flags and the audit log are untouched. Returns whether it did.
    func rehashPassword(_ id: UserID, hash: String, replacing: String) async throws -> Bool
    /// The user's links to accounts at OpenID Connect issuers (``OIDCIdentity``), by issuer.
    func identities(of id: UserID, in company: CompanyID) async throws -> [OIDCIdentity]
    /// Forgets the user's links to accounts at OpenID Connect issuers, so that their next sign-in at
    /// each issuer links them anew: for an account the issuer made again. Returns how many there
    /// were; `audit` is written only if there were any. ``StoreError/notFound`` for a user not of
    /// `company`; only while `admin` still is one (``AdminCheck``).
    func unlinkIdentities(of id: UserID, in company: CompanyID, checking admin: AdminCheck?, audit: AuditEvent) async throws -> Int

    // MARK: Rooms
    func createRoom(_ room: Room, checking admin: AdminCheck?, audit: AuditEvent) async throws
    func room(_ id: RoomID, in company: CompanyID) async throws -> Room?
    func rooms(in company: CompanyID) async throws -> [Room]
    /// The company's rooms with each authorized list cut down to `user` (whether they are on it):
    /// what deciding one user's access needs, without reading every room's whole list.
    func rooms(in company: CompanyID, authorizationsOf user: UserID) async throws -> [Room]
    /// Applies `change` to the room as stored, in one write transaction, and returns the room as
    /// saved; only the editable fields are kept (name, description, type, bookable, level, updatedAt).
    /// A change that changes none of them writes nothing, and returns the room as stored.
    func updateRoom(
        _ id: RoomID, in company: CompanyID, checking admin: AdminCheck?, audit: AuditEvent, change: (inout Room) throws -> Void
    ) async throws -> Room
    func deleteRoom(_ id: RoomID, in company: CompanyID, checking admin: AdminCheck?, audit: AuditEvent) async throws
    /// Puts `user` on `room`'s list or takes them off: ``StoreError/roomNotFound`` for a room not of
    /// `company`, then ``StoreError/notFound`` for a user not of it. A change that changes nothing
    /// writes no event.
    func setAuthorization(
        user: UserID, room: RoomID, in company: CompanyID, authorized: Bool, checking admin: AdminCheck?, audit: AuditEvent) async throws

    // MARK: Locks
    /// Who keeps `company` from registering a lock of this device id, if anyone: a lock whose
    /// ``LockIDClaim/isKept(from:lapsedBefore:)``, or, when no lock has it, another company the
    /// operator released it to since `lapsedBefore`. Device ids are unique across companies, and a
    /// broker account is named after one.
    func lockIDHolder(_ id: LockID, for company: CompanyID, lapsedBefore: Date) async throws -> LockIDHolder?
    /// Frees the id for `company`'s registration: another company's lock that no longer keeps it
    /// (``LockIDClaim``) is deleted, with a ``AuditAction/releaseLock`` event in that company's log
    /// (no actor: it does not say who took the lock), and `true` returned; so is a lapsed release of
    /// the id by the operator to another company, without an event. ``StoreError/lockIDTaken`` when a
    /// lock or such a release keeps it; `false` when there is no lock to release. Only while `admin`
    /// still is one (``AdminCheck``).
    func releaseLapsedLock(_ id: LockID, for company: CompanyID, lapsedBefore: Date, at: Date, checking admin: AdminCheck?) async throws -> Bool
    /// Adds a registered lock with its audit event, in one transaction, once its broker account exists
    /// (``StoreError/lockIDTaken``, ``StoreError/notFound`` for a room not in the lock's company). A
    /// retired lock of the same id and company is registered anew: its row takes the new lock's name,
    /// room and dates, and starts without a key, as a new one does. (Its earlier life is in the audit
    /// log; if it was never activated, it keeps holding the id since its first registration.) An id
    /// the operator released to another company is ``StoreError/lockIDTaken`` until
    /// ``releaseLapsedLock(_:for:lapsedBefore:at:checking:)`` finds the release lapsed; one released
    /// to this company is taken up.
    func createLock(_ lock: Lock, checking admin: AdminCheck?, audit: AuditEvent?) async throws
    func lock(_ id: LockID, in company: CompanyID) async throws -> Lock?
    /// The lock of this device id, whichever company's: for what the server does about a lock's
    /// broker account on its own (``AuditReason/messageFlood``) and for the operator, never for a
    /// request of the API, none of which reads across companies.
    func lockOfAnyCompany(_ id: LockID) async throws -> Lock?
    func locks(in company: CompanyID) async throws -> [Lock]
    /// Everything `user`'s unlock needs, in one read: the lock, its room and its sealed device key.
    /// The room's ``Room/authorizedUsers`` is narrowed to `user` (present if and only if they are on
    /// the list): all the access rule asks of it, answered by an index whatever the list's length.
    func unlockContext(_ id: LockID, in company: CompanyID, for user: UserID) async throws -> (lock: Lock, room: Room?, sealedKey: [UInt8]?)?
    func activateLock(_ id: LockID, in company: CompanyID, sealedKey: [UInt8], at: Date, checking admin: AdminCheck?, audit: AuditEvent) async throws
    /// Holds the device key of a pairing about to be confirmed (sealed) and the wrapped key the lock
    /// sent, until ``activateLock(_:in:sealedKey:at:checking:audit:)`` or ``retireLock(_:in:at:audit:)`` clears
    /// them or another pairing replaces them: if the lock's answer to the confirmation is lost, the
    /// next attempt can still finish.
    func holdPendingKey(_ id: LockID, in company: CompanyID, sealedKey: [UInt8], wrappedKey: [UInt8]) async throws
    /// What ``holdPendingKey(_:in:sealedKey:wrappedKey:)`` holds for the lock, if anything.
    func pendingKey(_ id: LockID, in company: CompanyID) async throws -> (sealedKey: [UInt8], wrappedKey: [UInt8])?
    /// Not checked against its admin (``AdminCheck``) in its own transaction: it follows the deletion
    /// of the lock's broker account, which cannot be undone, and the row must say the lock is retired.
    func retireLock(_ id: LockID, in company: CompanyID, at: Date, audit: AuditEvent) async throws
    /// Renames the lock and/or moves it to another room of its company (``StoreError/roomNotFound``);
    /// a retired lock is not changed (``StoreError/lockRetired``). The event records what changed; a
    /// change that changes nothing writes nothing.
    func updateLock(
        _ id: LockID, in company: CompanyID, name: String?, room: RoomID?, checking admin: AdminCheck?, audit: AuditEvent
    ) async throws -> Lock
    /// Records what the broker says of locks' connections (the lock gateway batches these).
    func recordPresence(_ updates: [LockPresence]) async throws

    // MARK: Settings
    /// A small server-wide value (e.g. the master key's check value); `nil` if never set.
    func setting(_ name: String) async throws -> String?
    func setSetting(_ name: String, value: String) async throws

    // MARK: Sessions
    /// Throws ``StoreError/sessionEnded`` or ``StoreError/adminRequired`` unless `check` passes now:
    /// before a step that cannot be taken back, such as a change to a lock's broker account.
    func verifyAdmin(_ check: AdminCheck) async throws
    /// Starts `session` if its user still exists, is enabled (else ``StoreError/userDisabled``) and,
    /// for a password sign-in, still has the hash `verifiedHash` the password was checked against
    /// (else ``StoreError/credentialsChanged``): a sign-in that waited for bcrypt while the password
    /// was changed must not outlive the change. For an OpenID Connect sign-in, `spending` the ID
    /// token is recorded in the same transaction, and a token recorded before refuses the session
    /// (``StoreError/idTokenSpent``): of two sign-ins with one token, however close, one gets a session.
    /// The token's ``OIDCIdentity`` links the user to that account at the issuer on their first
    /// sign-in there; after that, a token of another account there refuses the session, as does one
    /// of an account linked to another user (``StoreError/identityMismatch``).
    /// `audit`, given the user as stored, makes the sign-in's event, written in the same transaction:
    /// no session without its event. Returns the user as stored.
    func createSession(
        _ session: Session, verifiedHash: String?, spending idToken: SpentIDToken?, audit: (@Sendable (User) -> AuditEvent)?
    ) async throws -> User
    /// The session and its user, if the token hash is known (valid or not: the caller checks).
    func session(tokenHash: [UInt8]) async throws -> (session: Session, user: User)?
    /// Revokes the session, writing `audit` (the sign-out's event) in the same transaction.
    func revokeSession(tokenHash: [UInt8], at: Date, audit: AuditEvent?) async throws
    /// Deletes sessions that expired before `date` (they can never be used again); returns how many.
    func purgeSessions(expiredBefore date: Date) async throws -> Int
    /// Forgets spent ID tokens kept until before `date` (the verifier refuses them anyway); returns how many.
    func purgeSpentIDTokens(keptUntilBefore date: Date) async throws -> Int

    // MARK: Upkeep
    /// Periodic housekeeping that must stay off the request path (SQLite: checkpointing the
    /// write-ahead log, whose fsync would otherwise land on a random request). May block: call it
    /// from a thread of its own.
    func maintain() throws

    // MARK: Audit
    /// Writes `event` to the audit log and returns once it is committed.
    func append(_ event: AuditEvent) async throws
    /// Hands `event` to the audit log without waiting for its commit, which follows within
    /// milliseconds, in order with every other event, and is retried until it succeeds. For the
    /// unlock path, where the lock has already answered; it asks ``auditHasRoom`` first.
    func enqueue(_ event: AuditEvent)
    /// Whether the audit log's write queue is below its bound (a failing or far-behind disk fills it).
    var auditHasRoom: Bool { get }
    /// Waits until every event handed to the audit log before the call is committed.
    func flushAudit() async throws
    /// The newest matching events; they include every event handed in before the call.
    func auditEvents(_ query: AuditQuery) async throws -> [AuditEvent]
}

extension Store {
    /// A session without an audit event of its own (a test's, a benchmark's).
    public func createSession(_ session: Session, verifiedHash: String?, spending idToken: SpentIDToken? = nil) async throws -> User {
        try await createSession(session, verifiedHash: verifiedHash, spending: idToken, audit: nil)
    }

    /// The admin changes below without a check of their admin (``AdminCheck``): a test's, a benchmark's.
    public func updateUser(_ id: UserID, in company: CompanyID, audit: AuditEvent, change: (inout User) throws -> Void) async throws -> User {
        try await updateUser(id, in: company, checking: nil, audit: audit, change: change)
    }

    public func deleteUser(_ id: UserID, in company: CompanyID, audit: AuditEvent) async throws {
        try await deleteUser(id, in: company, checking: nil, audit: audit)
    }

    public func createRoom(_ room: Room, audit: AuditEvent) async throws {
        try await createRoom(room, checking: nil, audit: audit)
    }

    public func updateRoom(_ id: RoomID, in company: CompanyID, audit: AuditEvent, change: (inout Room) throws -> Void) async throws -> Room {
        try await updateRoom(id, in: company, checking: nil, audit: audit, change: change)
    }

    public func deleteRoom(_ id: RoomID, in company: CompanyID, audit: AuditEvent) async throws {
        try await deleteRoom(id, in: company, checking: nil, audit: audit)
    }

    public func setAuthorization(user: UserID, room: RoomID, in company: CompanyID, authorized: Bool, audit: AuditEvent) async throws {
        try await setAuthorization(user: user, room: room, in: company, authorized: authorized, checking: nil, audit: audit)
    }

    public func updateLock(_ id: LockID, in company: CompanyID, name: String?, room: RoomID?, audit: AuditEvent) async throws -> Lock {
        try await updateLock(id, in: company, name: name, room: room, checking: nil, audit: audit)
    }

    /// A lock without an audit event or a check of its admin (a test's, a benchmark's).
    public func createLock(_ lock: Lock) async throws {
        try await createLock(lock, checking: nil, audit: nil)
    }

    /// An activation without a check of its admin (a test's).
    public func activateLock(_ id: LockID, in company: CompanyID, sealedKey: [UInt8], at: Date, audit: AuditEvent) async throws {
        try await activateLock(id, in: company, sealedKey: sealedKey, at: at, checking: nil, audit: audit)
    }

    /// A revocation without an audit event of its own (a test's).
    public func revokeSession(tokenHash: [UInt8], at: Date) async throws {
        try await revokeSession(tokenHash: tokenHash, at: at, audit: nil)
    }
}

/// Who has a device id that a company would register (``Store/lockIDHolder(_:for:lapsedBefore:)``).
public enum LockIDHolder: Sendable, Equatable {
    /// The company itself, with a lock it has not retired.
    case sameCompany
    /// Another company: telling it counts against the asking company's budget.
    case otherCompany
}
