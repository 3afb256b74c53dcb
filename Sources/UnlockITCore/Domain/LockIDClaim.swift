import Foundation

/// What of a lock decides whether it keeps its device id from a registration by a company.
///
/// Anyone who sees a lock can read the device id on its label. A registration of a factory id
/// (``LockID/hasFactoryForm``) needs the lock's setup code; of any other id, nothing. An activation
/// proves that the lock that answered was made with the code the admin typed (for a factory id,
/// that id's code). So a lock of another company keeps its id while it is active, or while a
/// pairing that got as far as its key is unfinished; otherwise only until its hold is older than
/// the lapse (``isKept(from:lapsedBefore:)``), and then any company may register the id. A
/// registration made first and left unactivated therefore cannot keep an id from its owner for
/// good, and a company that retired a lock lets its id go to whoever has the device next.
public struct LockIDClaim: Sendable, Equatable {
    public var companyID: CompanyID
    public var state: LockState
    /// When the lock's company began to hold the id without an active lock to show for it: its
    /// registration, or its retirement if it had been activated. A company that registers its own
    /// retired lock again that was never activated keeps the date of the first registration, so
    /// that retiring and registering again cannot restart the lapse.
    public var heldSince: Date
    /// A pairing got as far as the lock's key (the setup code unwrapped it) and was not finished.
    public var pairingPending: Bool

    public init(companyID: CompanyID, state: LockState, heldSince: Date, pairingPending: Bool) {
        self.companyID = companyID
        self.state = state
        self.heldSince = heldSince
        self.pairingPending = pairingPending
    }

    /// Whether the lock keeps its id from a registration by `company`: its own company's lock unless
    /// it is retired; another's while it is active or its pairing pending, or while it has held the
    /// id since `lapsedBefore` or later.
    public func isKept(from company: CompanyID, lapsedBefore: Date) -> Bool {
        if companyID == company { return state != .retired }
        return state == .active || pairingPending || heldSince >= lapsedBefore
    }
}
