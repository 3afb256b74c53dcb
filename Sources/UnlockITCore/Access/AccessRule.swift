/// Who may open which door: a pure function of the user, the lock and the lock's room.
///
/// A user may open a lock iff they are in the lock's company, their account is enabled, the lock is
/// active, and either their security level is at least the room's required level or they are on the
/// room's list of authorized users. Admins follow the same rule. Everything else is denied; checks run
/// in the order above and the first that fails gives the reason.
public enum AccessRule {
    public static func decide(user: User, lock: Lock, room: Room?) -> AccessDecision {
        guard user.companyID == lock.companyID else { return AccessDecision(.otherCompany) }
        guard user.enabled else { return AccessDecision(.userDisabled) }
        guard lock.state == .active else { return AccessDecision(.lockInactive) }
        // A lock whose room is unknown, or a room that is not the lock's, admits nobody.
        guard let room, room.id == lock.roomID, room.companyID == lock.companyID else { return AccessDecision(.notAuthorized) }
        if room.authorizedUsers.contains(user.id) { return AccessDecision(.authorizedUser) }
        guard let required = room.requiredLevel else { return AccessDecision(.notAuthorized) }
        return AccessDecision(user.securityLevel >= required ? .levelSufficient : .levelTooLow)
    }
}
