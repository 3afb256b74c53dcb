import Hummingbird

/// Which methods each of the router's paths answers: a request for a path the API has, with a
/// method it does not answer there, gets 405 `method_not_allowed` and an `Allow` header (RFC 9110
/// §15.5.6), not a 404 that would say the path does not exist.
struct AllowedMethods: Sendable {
    private struct Route: Sendable {
        /// A path's segments; `nil` for a parameter (`{id}`), which any one segment fills.
        let segments: [String?]
        var methods: Set<HTTPRequest.Method>
    }

    private let routes: [Route]

    init(_ routes: [Router<AppContext>.RouteDescription]) {
        var table: [[String?]: Set<HTTPRequest.Method>] = [:]
        for route in routes {
            // The API's routes are literal segments and whole-segment parameters (`{id}`).
            let segments = route.path.components.map(\.description).map { $0.hasPrefix("{") ? nil : $0 }
            table[segments, default: []].insert(route.method)
            // The router answers HEAD wherever it answers GET (`autoGenerateHeadEndpoints`); those
            // HEAD routes are made when it starts serving, so they are not in this list yet.
            if route.method == .get { table[segments, default: []].insert(.head) }
        }
        self.routes = table.map { Route(segments: $0.key, methods: $0.value) }
    }

    /// The methods the route the router resolves `path` to answers, sorted; empty when no route
    /// has that path.
    ///
    /// Where several routes fit, the router takes a literal segment over a parameter, from the left
    /// (`/users/import`, not `/users/{id}`), and answers only that route's methods: `GET
    /// /users/import` is not `GET /users/{id}`.
    func methods(for path: String) -> [HTTPRequest.Method] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        let fitting = routes.filter { route in
            route.segments.count == parts.count
                && zip(route.segments, parts).allSatisfy { segment, part in segment.map { $0 == part } ?? true }
        }
        // Parameters as `true`, so that the least of these keys has its first literal furthest left.
        let chosen = fitting.min { first, second in
            first.segments.map { $0 == nil }.lexicographicallyPrecedes(second.segments.map { $0 == nil }) { !$0 && $1 }
        }
        return (chosen?.methods ?? []).sorted { $0.rawValue < $1.rawValue }
    }
}

/// Answers 405 with `Allow` where the router found the path but not the method.
///
/// Added to the router after every route, so that it wraps no endpoint and only the router's
/// not-found responder, which Hummingbird builds with all the router's middleware: every
/// `HTTPError(.notFound)` it sees is a request no route matched.
struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = AppContext
    let allowed: AllowedMethods

    func handle(_ request: Request, context: AppContext, next: (Request, AppContext) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let methods = allowed.methods(for: request.uri.path)
            guard !methods.isEmpty else { throw error }
            throw APIError.methodNotAllowed(allow: methods)
        }
    }
}
