import Hummingbird

/// What every answer says about how it may be kept and read (OWASP's headers for a REST API):
/// - `Cache-Control: no-store` (RFC 9111 §5.2.2.5): a sign-in carries a bearer token, a new user,
///   a password reset or a lock's registration a password shown once, and every other answer is one
///   signed-in person's view of their company. None of it may be kept by a browser's or a proxy's
///   cache.
/// - `X-Content-Type-Options: nosniff`: a browser takes an answer for what its `Content-Type` says,
///   never for HTML or script guessed from its bytes (a problem's detail or a room's name repeats
///   what a client sent).
/// - `Content-Security-Policy: default-src 'none'; frame-ancestors 'none'`: an answer opened in a
///   browser loads nothing and cannot be framed by another site.
struct SecurityHeadersMiddleware: RouterMiddleware {
    typealias Context = AppContext

    static let contentSecurityPolicy = "default-src 'none'; frame-ancestors 'none'"

    func handle(_ request: Request, context: AppContext, next: (Request, AppContext) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.cacheControl] = "no-store"
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        return response
    }
}
