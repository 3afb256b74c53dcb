import Foundation
import Hummingbird
import UnlockITCore

/// Sign-in (password and OpenID Connect) and sign-out.
struct AuthController {
    let services: AppServices

    struct PasswordSignIn: RequestBody {
        var email: String
        var password: String
        static let fields: Set<String> = ["email", "password"]
    }

    struct OIDCSignIn: RequestBody {
        var clientID: String
        var idToken: String
        static let fields: Set<String> = ["clientID", "idToken"]
    }

    /// The tutorial's `{chatterID, lifetime}`, here `{token, lifetime}`.
    struct SignedIn: ResponseCodable {
        var token: String
        /// Seconds the token stays valid.
        var lifetime: Int
        var expiresAt: Date
        var mustChangePassword: Bool
        var user: UserResponse
    }

    func addRoutes(to group: RouterGroup<AppContext>) {
        group.post("auth/sign-in", use: signIn)
        group.post("auth/oidc", use: oidcSignIn)
    }

    func addSignedInRoutes(to group: RouterGroup<AppContext>) {
        group.post("auth/sign-out", use: signOut)
    }

    @Sendable func signIn(request: Request, context: AppContext) async throws -> SignedIn {
        let client = try services.admitPasswordClient(request, context)
        let body = try await request.decodeStrict(PasswordSignIn.self, context: context)
        let now = services.clock.now()
        // Every failure below answers the same 401 after the same bcrypt work: a wrong email, a wrong
        // password, an account over its hourly limit and a locked-out account look alike.
        guard let email = Validation.email(body.email), body.password.utf8.count <= 1024 else {
            try await services.hasher.verifyNothing(body.password, client: client)
            throw APIError.invalidCredentials
        }
        let attempt: SignInLimiter.Attempt
        switch services.signInLimiter.begin(email, client: client, now: now) {
        case .check(let started):
            attempt = started
        case .busy:
            services.metrics.signIn(outcome: "busy")
            throw APIError.serverBusy
        case .refused:
            try await services.hasher.verifyNothing(body.password, client: client)
            services.metrics.signIn(outcome: "throttled")
            if let (user, _) = try await services.store.credentials(email: email) {
                services.store.enqueue(
                    services.audit(.signIn, by: nil, company: user.companyID, outcome: .denied, reason: .throttled, subject: user.id))
            }
            throw APIError.invalidCredentials
        }
        var account: (user: User, hash: String)?
        var rightButDisabled = false
        let passed = try await services.signInLimiter.verdict(of: attempt, at: services.clock.now) {
            guard let (user, hash) = try await services.store.credentials(email: email), let hash else {
                try await services.hasher.verifyNothing(body.password, client: client)
                return false
            }
            account = (user, hash)
            let right = try await services.hasher.verify(body.password, hash: hash, client: client)
            // A disabled account's right password is answered, and counted, as a wrong one: a
            // different answer (or the limiter's count set back) would confirm a guess at the
            // password of an account its owner has left, which may well open something elsewhere.
            rightButDisabled = right && !user.enabled
            return right && user.enabled
        }
        guard let (user, hash) = account, passed else {
            services.metrics.signIn(outcome: rightButDisabled ? "user_disabled" : "failure")
            // Queued, not awaited: an unknown email writes nothing, and waiting for this commit
            // would tell the two apart by the answer's time. The company's log says which it was.
            if let (user, _) = account {
                services.store.enqueue(
                    services.audit(
                        .signIn, by: nil, company: user.companyID, outcome: .denied, reason: rightButDisabled ? .userDisabled : .wrongPassword,
                        subject: user.id))
            }
            throw APIError.invalidCredentials
        }
        // The hash may change while this sign-in checked the password: another sign-in of the same
        // account may have made it again at a new cost (below), which the same password still opens.
        let (signedIn, over): (SignedIn, String)
        do {
            (signedIn, over) = try await services.overVerifiedHash(hash, email: email, password: body.password, client: client) {
                try await startSession(for: user, method: .password, verifiedHash: $0)
            }
        } catch StoreError.credentialsChanged {
            services.metrics.signIn(outcome: "failure")
            throw APIError.invalidCredentials
        }
        // Made at another cost than the current one: hashed again now that the password is known, so
        // that raising the cost reaches every account that signs in. A failure only leaves it for next time.
        if services.hasher.isOutdated(over), let newHash = try? await services.hasher.hash(body.password, client: client) {
            _ = try? await services.store.rehashPassword(user.id, hash: newHash, replacing: over)
        }
        return signedIn
    }

    @Sendable func oidcSignIn(request: Request, context: AppContext) async throws -> SignedIn {
        try services.admitPasswordClient(request, context)
        let body = try await request.decodeStrict(OIDCSignIn.self, context: context)
        let identity: OIDCVerifier.VerifiedIdentity
        do {
            identity = try await services.oidc.verify(idToken: body.idToken, clientID: body.clientID)
        } catch .keysUnavailable {
            // Not the token's fault: the issuer's keys could not be loaded (its provider down). A 511
            // would tell the client its token is bad.
            services.metrics.signIn(outcome: "provider_unavailable")
            throw APIError.identityProviderUnavailable
        } catch {
            services.metrics.signIn(outcome: "id_token_invalid")
            var problem = APIError.idTokenInvalid
            problem.reason = error.rejection?.rawValue
            throw problem
        }
        guard let email = Validation.email(identity.email), let (user, _) = try await services.store.credentials(email: email) else {
            services.metrics.signIn(outcome: "no_account")
            throw APIError.noAccount
        }
        guard identity.maySignIn(user) else {
            // Another company's identity provider vouching for this user: recorded for the user's company,
            // answered as if there were no account, so the issuer learns nothing (the event is queued,
            // not awaited: an answer that waited for its commit would come later than a missing account's).
            services.store.enqueue(
                services.audit(.signIn, by: nil, company: user.companyID, outcome: .denied, reason: .issuerNotTrusted, subject: user.id))
            // Counted as no account too: /metrics must not tell an issuer what its answer does not.
            services.metrics.signIn(outcome: "no_account")
            throw APIError.noAccount
        }
        return try await startSession(for: user, method: .oidc, verifiedHash: nil, spending: identity.token)
    }

    /// Starts a session for `user`, read before the password check (bcrypt) or the ID token's. The
    /// store checks again as it writes the session: a user disabled, deleted or given a new password
    /// (`verifiedHash` no longer theirs) in the meantime gets no session, nor does an ID token
    /// (`spending`) that has signed someone in before.
    private func startSession(
        for user: User, method: AuditReason, verifiedHash: String?, spending idToken: SpentIDToken? = nil
    ) async throws -> SignedIn {
        /// A user disabled since they were read. Told so after an ID token, which the identity
        /// provider vouched for; after a password, answered as a wrong one (see ``signIn(request:context:)``).
        func refuseDisabled() async throws -> Never {
            try await services.store.append(
                services.audit(.signIn, by: nil, company: user.companyID, outcome: .denied, reason: .userDisabled, subject: user.id))
            services.metrics.signIn(outcome: "user_disabled")
            throw method == .password ? APIError.invalidCredentials : APIError.userDisabled
        }
        /// An ID token the session's write refused: the user's company learns of it (`reason`, also the
        /// metric's outcome), and the client why (`rejection`).
        func refuse(_ rejection: IDTokenRejection, audited reason: AuditReason) async throws -> Never {
            try await services.store.append(
                services.audit(.signIn, by: nil, company: user.companyID, outcome: .denied, reason: reason, subject: user.id))
            services.metrics.signIn(outcome: reason.rawValue)
            var problem = APIError.idTokenInvalid
            problem.reason = rejection.rawValue
            throw problem
        }
        guard user.enabled else { try await refuseDisabled() }
        let token = SessionTokens.generate()
        let now = services.clock.now()
        let session = Session(
            tokenHash: SessionTokens.hash(token), userID: user.id, createdAt: now,
            expiresAt: now.addingTimeInterval(TimeInterval(services.tokenLifetime)))
        let user: User
        do {
            // The sign-in's event commits with the session: no session without it.
            user = try await services.store.createSession(session, verifiedHash: verifiedHash, spending: idToken) { [services] user in
                services.audit(.signIn, by: user, company: user.companyID, reason: method, subject: user.id)
            }
        } catch StoreError.userDisabled {
            try await refuseDisabled()
        } catch StoreError.idTokenSpent {
            // A copy of an ID token that has signed someone in: someone holds it.
            try await refuse(.reused, audited: .idTokenReused)
        } catch StoreError.identityMismatch {
            // A token of another account at the issuer than the user's (an address that passed to
            // someone else there), or of another user's; an admin may unlink the user if the issuer
            // made their account again.
            try await refuse(.identityMismatch, audited: .identityMismatch)
        } catch StoreError.credentialsChanged where verifiedHash == nil {
            // Without a verified hash (an ID token's sign-in) the user was deleted meanwhile: answered as
            // for an email without an account. (With one the caller decides: see ``signIn(request:context:)``.)
            services.metrics.signIn(outcome: "no_account")
            throw APIError.noAccount
        }
        services.metrics.signIn(outcome: "success")
        return SignedIn(
            token: token, lifetime: services.tokenLifetime, expiresAt: session.expiresAt, mustChangePassword: user.mustChangePassword,
            user: UserResponse(user))
    }

    @Sendable func signOut(request: Request, context: AppContext) async throws -> HTTPResponse.Status {
        let identity = try context.requireIdentity(allowingDisabled: true)
        // The sign-out's event commits with the revocation.
        try await services.store.revokeSession(
            tokenHash: identity.tokenHash, at: services.clock.now(),
            audit: services.audit(.signOut, by: identity.user, company: identity.user.companyID, subject: identity.user.id))
        return .noContent
    }
}
