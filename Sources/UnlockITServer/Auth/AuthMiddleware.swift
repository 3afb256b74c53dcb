import Foundation
import Hummingbird
import UnlockITCore

/// Resolves `Authorization: Bearer <token>` to a signed-in user, or answers 401.
///
/// Unless `allowsPendingPasswordChange`, a user who still has an admin-given password is refused
/// with 403 `password_change_required`: the server, not the client, enforces the first-login change.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = AppContext
    let store: any Store
    let clock: ServerClock
    var allowsPendingPasswordChange = false

    func handle(_ request: Request, context: AppContext, next: (Request, AppContext) async throws -> Response) async throws -> Response {
        guard let token = request.headers.bearerToken, SessionTokens.isWellFormed(token) else { throw APIError.unauthenticated }
        var context = context
        context.identity = try await identity(tokenHash: SessionTokens.hash(token))
        return try await next(request, context)
    }

    /// The session's user as stored now: 401 unless the session is live, 403 for a pending
    /// password change unless allowed.
    func identity(tokenHash: [UInt8]) async throws -> Identity {
        // A disabled user's session stays authenticated, so that an unlock attempt is refused by the
        // access rule and audited; every other route refuses them (AppContext.requireIdentity).
        guard let (session, user) = try await store.session(tokenHash: tokenHash), session.isValid(at: clock.now()) else {
            throw APIError.unauthenticated
        }
        if user.mustChangePassword && !allowsPendingPasswordChange { throw APIError.passwordChangeRequired }
        return Identity(user: user, tokenHash: tokenHash)
    }
}

/// Admin-only routes: 403 `admin_required` for everyone else.
///
/// A change's body arrives at the client's pace: the idle timeout restarts with every byte, so a
/// client can hold a request open for as long as it likes between its head, where ``AuthMiddleware``
/// looked the session up, and its end. An admin demoted, disabled or signed out meanwhile must not
/// finish a change begun before; so for every method but GET and HEAD the body is read first and
/// the session and role are checked again once it is in. (Writes that follow slow work of the
/// server's own, bcrypt, check once more as they commit: ``AdminCheck``.)
struct RequireAdmin: RouterMiddleware {
    typealias Context = AppContext
    /// The check the route's head passed, run again.
    let authentication: AuthMiddleware

    func handle(_ request: Request, context: AppContext, next: (Request, AppContext) async throws -> Response) async throws -> Response {
        let identity = try context.requireIdentity()
        guard identity.user.role == .admin else { throw APIError.adminRequired }
        guard request.method != .get && request.method != .head else { return try await next(request, context) }
        var request = request
        _ = try await request.collectBody(upTo: context.maxUploadSize)
        var context = context
        context.identity = try await authentication.identity(tokenHash: identity.tokenHash)
        guard try context.requireIdentity().user.role == .admin else { throw APIError.adminRequired }
        return try await next(request, context)
    }
}

extension HTTPFields {
    /// The token of an `Authorization: Bearer …` header (the scheme in any case, as RFC 9110 says).
    var bearerToken: String? {
        guard let value = self[.authorization] else { return nil }
        let parts = value.utf8.split(separator: UInt8(ascii: " "), maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].count == 6, String(Substring(parts[0])).lowercased() == "bearer" else { return nil }
        let token = parts[1].drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        return String(Substring(token))
    }
}
