import Foundation
import Hummingbird
import UnlockITCore

/// The signed-in user: who am I, change my password, what can I open.
struct MeController {
    let services: AppServices

    struct Me: ResponseCodable {
        var user: UserResponse
        var company: CompanyResponse
    }

    struct CompanyResponse: Codable, Sendable {
        var id: String
        var name: String
    }

    struct PasswordChange: RequestBody {
        var currentPassword: String
        var newPassword: String
        static let fields: Set<String> = ["currentPassword", "newPassword"]
    }

    /// One lock the user could try, and what the access rule says.
    struct AccessEntry: Codable, Sendable {
        var lockId: String
        var lockName: String
        var roomId: String?
        var roomName: String?
        var allowed: Bool
        var reason: AccessReason
        var online: Bool
    }

    /// Routes open to a user who has not yet replaced an admin-given password.
    func addPasswordRoutes(to group: RouterGroup<AppContext>) {
        group.post("me/password", use: changePassword)
    }

    func addRoutes(to group: RouterGroup<AppContext>) {
        group.get("me", use: me)
        group.get("me/access", use: access)
    }

    @Sendable func me(request: Request, context: AppContext) async throws -> Me {
        let user = try context.requireIdentity().user
        guard let company = try await services.store.company(user.companyID) else { throw APIError.unauthenticated }
        return Me(user: UserResponse(user), company: CompanyResponse(id: company.id.rawValue, name: company.name))
    }

    @Sendable func changePassword(request: Request, context: AppContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity()
        let client = try services.admitPasswordClient(request, context)
        let body = try await request.decodeStrict(PasswordChange.self, context: context)
        guard let (_, hash) = try await services.store.credentials(email: identity.user.email), let hash else {
            throw APIError.conflict(.noPassword, "This account signs in with OpenID Connect only")
        }
        // The cheap checks first: a new password that could never be set costs no bcrypt pass and no
        // attempt against the limit. They compare only what the request gives, so they say nothing
        // of the current password.
        guard Validation.password(body.newPassword, context: [identity.user.email, identity.user.name]) else { throw APIError.weakPassword }
        // Compared as they are hashed: a password in other characters that fold to the same (fullwidth
        // digits and letters) is the same password, and would keep the one an admin gave.
        guard !PasswordHasher.normalised(body.newPassword).utf8.elementsEqual(PasswordHasher.normalised(body.currentPassword).utf8) else {
            throw APIError(.badRequest, code: .passwordUnchanged, title: "Choose a password different from the current one")
        }
        // The current password is guessed against the same limit as sign-ins: a stolen session must
        // not become a way to try passwords without one (and then to take the account over).
        let attempt: SignInLimiter.Attempt
        switch services.signInLimiter.begin(identity.user.email, client: client, now: services.clock.now()) {
        case .check(let started):
            attempt = started
        case .busy:
            throw APIError.serverBusy
        case .refused:
            // Answered at once, without bcrypt: the caller is signed in to this very account, so its
            // lock-out is no secret to keep from them by timing, and a refusal that cost a bcrypt pass
            // would let one session keep the shared hasher full and turn every sign-in away.
            try await services.store.append(
                services.audit(
                    .changePassword, by: identity.user, company: identity.user.companyID, outcome: .denied, reason: .throttled,
                    subject: identity.user.id))
            throw APIError.wrongPassword
        }
        let passed = try await services.signInLimiter.verdict(of: attempt, at: services.clock.now) {
            try await services.hasher.verify(body.currentPassword, hash: hash, client: client)
        }
        guard passed else {
            try await services.store.append(
                services.audit(
                    .changePassword, by: identity.user, company: identity.user.companyID, outcome: .denied, reason: .wrongPassword,
                    subject: identity.user.id))
            throw APIError.wrongPassword
        }
        let newHash = try await services.hasher.hash(body.newPassword, client: client)
        do {
            _ = try await services.overVerifiedHash(hash, email: identity.user.email, password: body.currentPassword, client: client) { verified in
                try await services.store.setPassword(
                    identity.user.id, in: identity.user.companyID, hash: newHash, mustChange: false, keepSession: identity.tokenHash,
                    replacing: verified,
                    // Checked again as it is written: the user may have been disabled, or the session
                    // revoked, while the body arrived and bcrypt ran; the change must not land then.
                    checking: AdminCheck(session: identity.tokenHash, company: identity.user.companyID, at: services.clock.now(), needsAdmin: false),
                    audit: services.audit(.changePassword, by: identity.user, company: identity.user.companyID, subject: identity.user.id))
            }
        } catch StoreError.credentialsChanged {
            // Another change (of this session, or an admin's reset) came first, and the password given
            // as current is not any more; the session itself may well still be valid.
            throw APIError.wrongPassword
        }
        return .noContent
    }

    @Sendable func access(request: Request, context: AppContext) async throws -> ListResponse<AccessEntry> {
        let user = try context.requireIdentity().user
        let locks = try await services.store.locks(in: user.companyID).filter { $0.state != .retired }
        let rooms = Dictionary(
            uniqueKeysWithValues: try await services.store.rooms(in: user.companyID, authorizationsOf: user.id).map { ($0.id, $0) })
        let entries = locks.map { lock in
            let room = lock.roomID.flatMap { rooms[$0] }
            let decision = AccessRule.decide(user: user, lock: lock, room: room)
            return AccessEntry(
                lockId: lock.id.rawValue, lockName: lock.name, roomId: room?.id.rawValue, roomName: room?.name, allowed: decision.allowed,
                reason: decision.reason, online: services.gateway.isOnline(lock.id))
        }
        return ListResponse(items: entries)
    }
}
