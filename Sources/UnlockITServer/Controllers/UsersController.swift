import Foundation
import Hummingbird
import LockProtocol
import Logging
import UnlockITCore

/// Admin: the company's users.
struct UsersController {
    let services: AppServices

    struct Create: RequestBody {
        var email: String
        var name: String
        var role: Role
        var securityLevel: Int
        /// The initial password; generated (and returned once) when absent.
        var password: String?
        /// A user who signs in only with OpenID Connect: no password at all.
        var oidcOnly: Bool?
        var enabled: Bool?
        static let fields: Set<String> = ["email", "name", "role", "securityLevel", "password", "oidcOnly", "enabled"]
    }

    struct Update: RequestBody {
        var email: String?
        var name: String?
        var role: Role?
        var securityLevel: Int?
        var enabled: Bool?
        static let fields: Set<String> = ["email", "name", "role", "securityLevel", "enabled"]
    }

    struct ResetPassword: RequestBody {
        var password: String?
        static let fields: Set<String> = ["password"]
    }

    struct Created: ResponseCodable {
        var user: UserResponse
        /// Present only when the server chose the password: shown once.
        var initialPassword: String?
    }

    struct PasswordReset: ResponseCodable {
        var initialPassword: String?
    }

    struct Unlinked: ResponseCodable {
        /// How many accounts at OpenID Connect issuers the user was linked to.
        var unlinked: Int
    }

    struct Import: RequestBody {
        var users: [Create]
        static let fields: Set<String> = ["users"]
        static let rowFields = ["users": Create.fields]
    }

    /// One rejected row of an import: its 0-based index in `users`, the field and a stable reason.
    struct RowError: Codable, Sendable, Equatable {
        var index: Int
        var field: String
        var reason: String
    }

    struct Imported: ResponseCodable {
        var dryRun: Bool
        var created: [Created]
    }

    struct ImportRejected: Encodable {
        var type = "urn:unlockit:problem:import_rejected"
        var title = "Nothing was imported"
        var status = 422
        var code = ProblemCode.importRejected
        var detail: String
        var errors: [RowError]
    }

    func addRoutes(to group: RouterGroup<AppContext>) {
        group.get("users", use: list)
        group.post("users", use: create)
        group.get("users/:id", use: show)
        group.patch("users/:id", use: update)
        group.delete("users/:id", use: delete)
        group.post("users/:id/password", use: resetPassword)
        group.delete("users/:id/identities", use: unlinkIdentities)
    }

    /// The import, in a group of its own: one at a time per company (``OneImportPerCompany``).
    func addImportRoute(to group: RouterGroup<AppContext>) {
        group.post("users/import", use: importUsers)
    }

    static func userID(_ context: AppContext, _ name: String = "id") throws -> UserID {
        guard let text = context.parameters.get(name), let id = UserID(text) else { throw APIError.invalidID("the user id") }
        return id
    }

    @Sendable func list(request: Request, context: AppContext) async throws -> ListResponse<UserResponse> {
        let admin = try context.requireIdentity().user
        return ListResponse(items: try await services.store.users(in: admin.companyID).map(UserResponse.init))
    }

    @Sendable func show(request: Request, context: AppContext) async throws -> UserResponse {
        let admin = try context.requireIdentity().user
        guard let user = try await services.store.user(try Self.userID(context), in: admin.companyID) else { throw APIError.notFound(.userNotFound) }
        var response = UserResponse(user)
        response.oidcIssuers = try await services.store.identities(of: user.id, in: admin.companyID).map(\.issuer)
        return response
    }

    /// Checks a new user's fields; returns the first problem as (field, reason). `oidcSignsIn`: whether
    /// an OpenID Connect issuer may sign in the company's users (else none can be OpenID Connect only:
    /// they could never sign in, and an admin among them would keep the last-admin check from
    /// stopping the company's admins from locking themselves out).
    static func validate(_ body: Create, oidcSignsIn: Bool) -> (field: String, reason: String)? {
        if Validation.email(body.email) == nil { return ("email", "invalid_email") }
        if Validation.name(body.name) == nil { return ("name", "invalid_name") }
        if Validation.level(body.securityLevel) == nil { return ("securityLevel", "invalid_level") }
        if let password = body.password {
            if body.oidcOnly == true { return ("password", "oidc_only_has_no_password") }
            if !Validation.password(password, context: [body.email, body.name]) { return ("password", "weak_password") }
        }
        if body.oidcOnly == true, !oidcSignsIn { return ("oidcOnly", "no_oidc_issuer") }
        return nil
    }

    /// Which of `emails` are in use by a user other than `except`, within the company's budget for
    /// addresses of other companies (``CompanyDailyBudget``): a request over it, or finishing its
    /// lookups once it is spent, is answered 429 and tells nothing of the addresses.
    private func taken(_ emails: [String], by admin: User, except: UserID? = nil) async throws -> Set<String> {
        let limiter = services.takenEmailLimiter
        var taken: Set<String> = []
        var foreign = 0
        for email in emails {
            guard let (user, _) = try await services.store.credentials(email: email), user.id != except else { continue }
            taken.insert(email)
            if user.companyID != admin.companyID { foreign += 1 }
        }
        try limiter.count(
            foreign, by: admin, now: services.clock.now(), logger: services.logger,
            warning: "a company's admins ran into too many email addresses of other companies; their user changes are paused",
            refusal: APIError.tooManyTakenEmails)
        return taken
    }

    /// Builds the user and hashes their password. Returns the generated password if the server chose it.
    /// `queueing`: for an import, whose hashes take turns with sign-ins for minutes and must not fail
    /// halfway because a burst of sign-ins filled the queue.
    private func prepare(_ body: Create, admin: User, client: String, queueing: Bool = false) async throws -> (
        user: User, hash: String?, generated: String?
    ) {
        let now = services.clock.now()
        let oidcOnly = body.oidcOnly ?? false
        let generated = oidcOnly || body.password != nil ? nil : Self.initialPassword()
        let password = body.password ?? generated
        let hash = try await password.asyncMap { try await services.hasher.hash($0, client: client, queueing: queueing) }
        let user = User(
            id: .generate(), companyID: admin.companyID, email: Validation.email(body.email)!, name: Validation.name(body.name)!, role: body.role,
            securityLevel: body.securityLevel, enabled: body.enabled ?? true, mustChangePassword: !oidcOnly, createdAt: now, updatedAt: now)
        return (user, hash, generated)
    }

    @Sendable func create(request: Request, context: AppContext) async throws -> EditedResponse<Created> {
        let identity = try context.requireIdentity()
        let admin = identity.user
        let body = try await request.decodeStrict(Create.self, context: context)
        if let (field, reason) = Self.validate(body, oidcSignsIn: services.oidc.signsIn(admin.companyID)) {
            if reason == "weak_password" { throw APIError.weakPassword }
            // Not the request's fault but the company's set-up: the same body succeeds once an issuer
            // may sign in its users.
            if reason == "no_oidc_issuer" {
                throw APIError.conflict(.noOIDCIssuer, "No OpenID Connect issuer signs in this company's users, so the user needs a password")
            }
            throw APIError.invalidField(field, reason)
        }
        // Before the password's hash: an address in use costs no bcrypt time.
        guard try await taken([Validation.email(body.email)!], by: admin).isEmpty else { throw StoreError.emailTaken }
        let (user, hash, generated) = try await prepare(body, admin: admin, client: services.client(of: request, context))
        try await services.store.createUser(
            user, passwordHash: hash, checking: services.adminCheck(identity),
            audit: services.audit(.createUser, by: admin, company: admin.companyID, subject: user.id))
        return EditedResponse(status: .created, response: Created(user: UserResponse(user), initialPassword: generated))
    }

    @Sendable func importUsers(request: Request, context: AppContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let admin = identity.user
        // Anything but a plain yes or no is refused, and so is a misspelt name: a misspelt dry run
        // must not import for real.
        let dryRun: Bool
        switch try request.queryParameters(known: ["dryRun"])["dryRun"] {
        case nil, "false", "0": dryRun = false
        case "true", "1": dryRun = true
        default: throw APIError.invalidField("dryRun", "true or false")
        }
        let body = try await request.decodeStrict(Import.self, context: context)
        guard !body.users.isEmpty, body.users.count <= 10_000 else { throw APIError.invalidField("users", "1 to 10000 users") }

        // Every row is checked before anything is written: a file with one bad row imports nothing.
        let oidcSignsIn = services.oidc.signsIn(admin.companyID)
        var errors: [RowError] = []
        var seen: [String: Int] = [:]
        var firstRows: [(index: Int, email: String)] = []
        for (index, row) in body.users.enumerated() {
            if let (field, reason) = Self.validate(row, oidcSignsIn: oidcSignsIn) {
                errors.append(RowError(index: index, field: field, reason: reason))
                continue
            }
            let email = Validation.email(row.email)!
            if let first = seen[email] {
                errors.append(RowError(index: index, field: "email", reason: "duplicate_in_file(\(first))"))
            } else {
                seen[email] = index
                firstRows.append((index, email))
            }
        }
        let inUse = try await taken(firstRows.map(\.email), by: admin)
        for (index, email) in firstRows where inUse.contains(email) {
            errors.append(RowError(index: index, field: "email", reason: "email_taken"))
        }
        errors.sort { ($0.index, $0.field) < ($1.index, $1.field) }
        guard errors.isEmpty else {
            let problem = ImportRejected(detail: "\(errors.count) of \(body.users.count) rows were rejected.", errors: errors)
            var headers = HTTPFields()
            headers[.contentType] = "application/problem+json"
            return Response(
                status: .unprocessableContent, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try APIJSON.encoder.encode(problem))))
        }

        let client = services.client(of: request, context)
        var created: [Created] = []
        var prepared: [(user: User, passwordHash: String?)] = []
        for row in body.users {
            if dryRun {
                let now = services.clock.now()
                let user = User(
                    id: .generate(), companyID: admin.companyID, email: Validation.email(row.email)!, name: Validation.name(row.name)!,
                    role: row.role, securityLevel: row.securityLevel, enabled: row.enabled ?? true, mustChangePassword: row.oidcOnly != true,
                    createdAt: now, updatedAt: now)
                created.append(Created(user: UserResponse(user), initialPassword: nil))
            } else {
                // Hashing takes minutes for a large file, and nothing cancels it when the client goes:
                // an admin signed out, demoted or disabled meanwhile stops it at the next row, as the
                // commit would refuse it at the end.
                try await services.store.verifyAdmin(services.adminCheck(identity))
                let (user, hash, generated) = try await prepare(row, admin: admin, client: client, queueing: true)
                prepared.append((user, hash))
                created.append(Created(user: UserResponse(user), initialPassword: generated))
            }
        }
        if !dryRun {
            // The users exist from the commit on: their times and audit events say so, not when each
            // row's password was hashed (minutes earlier for a large import).
            let now = services.clock.now()
            let batch = prepared.map { user, hash in
                var user = user
                (user.createdAt, user.updatedAt) = (now, now)
                return (user, hash, services.audit(.createUser, by: admin, company: admin.companyID, reason: .import, subject: user.id))
            }
            try await services.store.createUsers(batch, checking: services.adminCheck(identity))
            created = zip(batch, created).map { row, answer in Created(user: UserResponse(row.0), initialPassword: answer.initialPassword) }
        }
        return try Imported(dryRun: dryRun, created: created).response(from: request, context: context)
    }

    @Sendable func update(request: Request, context: AppContext) async throws -> UserResponse {
        let identity = try context.requireIdentity()
        let admin = identity.user
        let id = try Self.userID(context)
        let body = try await request.decodeStrict(Update.self, context: context)
        let email = try body.email.map { email in
            guard let valid = Validation.email(email) else { throw APIError.invalidField("email", "invalid_email") }
            return valid
        }
        let name = try body.name.map { name in
            guard let valid = Validation.name(name) else { throw APIError.invalidField("name", "invalid_name") }
            return valid
        }
        let level = try body.securityLevel.map { level in
            guard let valid = Validation.level(level) else { throw APIError.invalidField("securityLevel", "invalid_level") }
            return valid
        }
        if let email {
            // Another company's user id answers 404 as before, not something about the address.
            guard try await services.store.user(id, in: admin.companyID) != nil else { throw APIError.notFound(.userNotFound) }
            guard try await taken([email], by: admin, except: id).isEmpty else { throw StoreError.emailTaken }
        }
        let now = services.clock.now()
        do {
            // Only the fields sent change, on the row as it is when the write starts.
            let user = try await services.store.updateUser(
                id, in: admin.companyID, checking: services.adminCheck(identity),
                audit: services.audit(.updateUser, by: admin, company: admin.companyID, subject: id)
            ) { user in
                if let email { user.email = email }
                if let name { user.name = name }
                if let level { user.securityLevel = level }
                if let role = body.role { user.role = role }
                if let enabled = body.enabled { user.enabled = enabled }
                user.updatedAt = now
            }
            return UserResponse(user)
        } catch StoreError.notFound {
            throw APIError.notFound(.userNotFound)
        }
    }

    @Sendable func delete(request: Request, context: AppContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let admin = identity.user
        let id = try Self.userID(context)
        guard id != admin.id else { throw APIError.conflict(.cannotDeleteSelf, "An admin cannot delete their own account") }
        do {
            try await services.store.deleteUser(
                id, in: admin.companyID, checking: services.adminCheck(identity),
                audit: services.audit(.deleteUser, by: admin, company: admin.companyID, subject: id))
        } catch StoreError.notFound {
            throw APIError.notFound(.userNotFound)
        }
        return .noContent
    }

    /// Gives the user a new initial password (which they must change) and signs them out everywhere.
    @Sendable func resetPassword(request: Request, context: AppContext) async throws -> PasswordReset {
        let identity = try context.requireIdentity()
        let admin = identity.user
        let id = try Self.userID(context)
        let body = try await request.decodeStrict(ResetPassword.self, context: context)
        // The body's own checks first: they need no read of the database.
        if let password = body.password, !Validation.password(password) { throw APIError.weakPassword }
        guard let user = try await services.store.user(id, in: admin.companyID) else { throw APIError.notFound(.userNotFound) }
        if let password = body.password, !Validation.password(password, context: [user.email, user.name]) { throw APIError.weakPassword }
        // Before bcrypt: a user who signs in with OpenID Connect only gets no password (checked again as it is written).
        guard case .some((_, .some)) = try await services.store.credentials(email: user.email) else { throw StoreError.noPassword }
        let generated = body.password == nil ? Self.initialPassword() : nil
        let hash = try await services.hasher.hash(body.password ?? generated!, client: services.client(of: request, context))
        do {
            try await services.store.setPassword(
                id, in: admin.companyID, hash: hash, mustChange: true, keepSession: nil, replacing: nil, checking: services.adminCheck(identity),
                audit: services.audit(.changePassword, by: admin, company: admin.companyID, reason: .resetByAdmin, subject: id))
        } catch StoreError.notFound {
            throw APIError.notFound(.userNotFound)
        }
        return PasswordReset(initialPassword: generated)
    }

    /// Forgets the user's links to accounts at OpenID Connect issuers: their next sign-in at each
    /// issuer links them to the account it is made with. For an account the issuer made again (a new
    /// `sub`), which is refused until then.
    @Sendable func unlinkIdentities(request: Request, context: AppContext) async throws -> Unlinked {
        let identity = try context.requireIdentity()
        let admin = identity.user
        let id = try Self.userID(context)
        do {
            let count = try await services.store.unlinkIdentities(
                of: id, in: admin.companyID, checking: services.adminCheck(identity),
                audit: services.audit(.unlinkIdentities, by: admin, company: admin.companyID, subject: id))
            return Unlinked(unlinked: count)
        } catch StoreError.notFound {
            throw APIError.notFound(.userNotFound)
        }
    }

    /// 100 random bits as four groups of five Crockford base32 characters, e.g. `7KQ2M-9XD4R-TAWZ3-C8HJN`.
    static func initialPassword() -> String {
        let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
        let characters = SecureRandom.bytes(20).map { alphabet[Int($0 & 31)] }
        return stride(from: 0, to: 20, by: 5).map { String(characters[$0..<$0 + 5]) }.joined(separator: "-")
    }
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
