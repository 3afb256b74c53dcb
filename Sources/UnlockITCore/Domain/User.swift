import Foundation

/// What a user may do besides opening doors: admins manage their company.
public enum Role: String, Sendable, Codable, CaseIterable {
    case admin
    case employee

    public init(from decoder: any Decoder) throws { self = try Self.decodeChoice(from: decoder) }
}

/// A person who signs in, belongs to one company and holds a security level.
public struct User: Sendable, Equatable {
    public var id: UserID
    public var companyID: CompanyID
    /// The sign-in name, stored in lowercase; unique across all companies.
    public var email: String
    public var name: String
    public var role: Role
    /// 0 = no clearance; higher = more.
    public var securityLevel: Int
    public var enabled: Bool
    /// Set for users an admin created with an initial password; every call but the password change
    /// is refused until they choose their own.
    public var mustChangePassword: Bool
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: UserID, companyID: CompanyID, email: String, name: String, role: Role, securityLevel: Int, enabled: Bool,
        mustChangePassword: Bool, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.companyID = companyID
        self.email = email
        self.name = name
        self.role = role
        self.securityLevel = securityLevel
        self.enabled = enabled
        self.mustChangePassword = mustChangePassword
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
