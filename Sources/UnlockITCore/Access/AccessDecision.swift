/// Why a user may or may not open a lock. The raw values are the API's and the CLI catalogs' codes.
public enum AccessReason: String, Sendable, Codable, CaseIterable {
    // Allowed
    /// The user's security level meets the room's required level.
    case levelSufficient = "level_sufficient"
    /// The user is on the room's list of authorized users.
    case authorizedUser = "authorized_user"

    // Denied by the rule
    /// The lock belongs to another company.
    case otherCompany = "other_company"
    /// The user's account is disabled.
    case userDisabled = "user_disabled"
    /// The lock is not active (not yet activated, or retired).
    case lockInactive = "lock_inactive"
    /// The user's level is below the room's and they are not on its list.
    case levelTooLow = "level_too_low"
    /// The room admits only its authorized users (it has no required level), and the user is not one.
    case notAuthorized = "not_authorized"

    public var allows: Bool { self == .levelSufficient || self == .authorizedUser }
}

/// The access rule's verdict: allow or deny, always with exactly one reason.
public struct AccessDecision: Sendable, Equatable {
    public let reason: AccessReason
    public var allowed: Bool { reason.allows }

    public init(_ reason: AccessReason) { self.reason = reason }
}
