import Foundation

extension Lock {
    /// Whether this lock keeps its device id from a registration by `company`.
    ///
    /// A device id is whatever an admin types in, and the one on a lock's label can be read by
    /// anyone who sees the lock. So a registration alone proves nothing: only an activation does,
    /// since it needs the device itself and the setup code on its label. A lock of another company
    /// that was never activated therefore keeps its id only while its registration is recent (made
    /// at or after `lapsedBefore`); after that, any company may register the id and take the row
    /// over, and a registration made first by someone without the device cannot keep it from its
    /// owner for good. A lock that was ever activated keeps its id from every other company, also
    /// once retired. Its own company may register the id again once it is retired.
    public func holdsID(against company: CompanyID, lapsedBefore: Date) -> Bool {
        if companyID == company { return state != .retired }
        return activatedAt != nil || createdAt >= lapsedBefore
    }
}
