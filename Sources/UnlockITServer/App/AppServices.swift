import Foundation
import Logging
import UnlockITCore

/// What the controllers share: the store, the clock, sign-in machinery, the lock gateway.
struct AppServices: Sendable {
    let store: any Store
    let clock: ServerClock
    let hasher: PasswordHasher
    let signInLimiter: SignInLimiter
    /// Password checks per client (``AdmitPasswordClient``).
    let clientLimiter: RateLimiter<String>
    /// Unlock attempts per user, whatever their outcome.
    let unlockLimiter: RateLimiter<UserID>
    let deniedUnlockLimiter: DeniedUnlockLimiter
    /// Email addresses and lock device ids of other companies each company is told of.
    let takenEmailLimiter: CompanyDailyBudget
    let takenLockIDLimiter: CompanyDailyBudget
    /// Wrong setup codes each company's admins give, registering factory device ids and activating locks.
    let wrongSetupCodeLimiter: CompanyDailyBudget
    /// Seconds a lock not in service keeps its device id from other companies (``ServerConfiguration/lockIDLapse``).
    let lockIDLapse: Int
    /// Canonical addresses (``ClientAddress/canonical(_:)``) of the trusted reverse proxies.
    let trustedProxies: Set<String>
    let oidc: OIDCVerifier
    let tokenLifetime: Int
    let gateway: LockGateway
    let accounts: BrokerAccounts
    let sealer: KeySealer
    let metrics: ServerMetrics
    let logger: Logger
    /// How locks reach the broker, for the credentials returned at registration.
    let brokerURL: String
    /// Registration, activation, retirement and a new broker password take turns per device id (``LocksController``).
    let lockAccountTurns = KeyedSerializer<LockID>()
    /// How long a change waits for its lock's turn: longer than any one change can take. Each of its
    /// broker commands gives up after 5 s, and an activation's exchanges with the lock after the
    /// unlock timeout (at most 5 s each, three of them).
    static let lockTurnWait: Duration = .seconds(30)

    /// A lock not in service that has held its device id since before this no longer keeps it from
    /// other companies (``LockIDClaim``).
    func lockIDsLapsedBefore() -> Date { clock.now().addingTimeInterval(-TimeInterval(lockIDLapse)) }

    /// An audit event stamped with the current time.
    func audit(
        _ action: AuditAction, by actor: User?, company: CompanyID, outcome: AuditOutcome = .success, reason: AuditReason? = nil,
        lock: LockID? = nil, room: RoomID? = nil, subject: UserID? = nil
    ) -> AuditEvent {
        AuditEvent(
            companyID: company, at: clock.now(), actorID: actor?.id, action: action, lockID: lock, roomID: room, subjectID: subject,
            outcome: outcome, reason: reason?.rawValue)
    }
}
