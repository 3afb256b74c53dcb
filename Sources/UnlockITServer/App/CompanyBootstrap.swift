import Foundation
import UnlockITCore

/// Creates a company with its first admin, whose initial password is generated, returned once and
/// must be changed at first sign-in.
public struct CompanyBootstrap: Sendable {
    let store: any Store
    let hasher: PasswordHasher
    let clock: ServerClock

    public init(store: any Store, hasher: PasswordHasher, clock: ServerClock = .system) {
        self.store = store
        self.hasher = hasher
        self.clock = clock
    }

    public func run(companyName: String, adminEmail: String, adminName: String) async throws -> (Company, initialPassword: String) {
        let now = clock.now()
        let company = Company(id: .generate(), name: companyName, createdAt: now)
        let admin = User(
            id: .generate(), companyID: company.id, email: adminEmail, name: adminName, role: .admin, securityLevel: 0, enabled: true,
            mustChangePassword: true, createdAt: now, updatedAt: now)
        let password = UsersController.initialPassword()
        let audit = AuditEvent(companyID: company.id, at: now, actorID: nil, action: .createCompany, subjectID: admin.id, outcome: .success)
        try await store.createCompany(
            company, admin: admin, passwordHash: try await hasher.hash(password, client: PasswordHasher.localClient), audit: audit)
        return (company, password)
    }
}
