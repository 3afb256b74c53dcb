import Foundation
import GRDB
import UnlockITCore

struct UserRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "user"
    var id: String
    var companyId: String
    var email: String
    var name: String
    var role: String
    var securityLevel: Int
    var enabled: Bool
    var passwordHash: String?
    var mustChangePassword: Bool
    var createdAt: Date
    var updatedAt: Date

    init(_ user: User, passwordHash: String?) {
        id = user.id.rawValue
        companyId = user.companyID.rawValue
        email = user.email
        name = user.name
        role = user.role.rawValue
        securityLevel = user.securityLevel
        enabled = user.enabled
        self.passwordHash = passwordHash
        mustChangePassword = user.mustChangePassword
        createdAt = user.createdAt
        updatedAt = user.updatedAt
    }

    var user: User {
        User(
            id: UserID(unchecked: id), companyID: CompanyID(unchecked: companyId), email: email, name: name,
            role: Role(rawValue: role) ?? .employee, securityLevel: securityLevel, enabled: enabled,
            mustChangePassword: mustChangePassword, createdAt: createdAt, updatedAt: updatedAt)
    }
}
