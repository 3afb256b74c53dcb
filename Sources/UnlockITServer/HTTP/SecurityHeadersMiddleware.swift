import Hummingbird

/// Every answer says `Cache-Control: no-store` (RFC 9111 §5.2.2.5): a sign-in carries a bearer
/// token, a new user, a password reset or a lock's registration a password shown once, and every
/// other answer is one signed-in person's view of their company. None of it may be kept by a
/// browser's or a proxy's cache.
struct NoStoreMiddleware: RouterMiddleware {
    typealias Context = AppContext

    func handle(_ request: Request, context: AppContext, next: (Request, AppContext) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.cacheControl] = "no-store"
        return response
    }
}
