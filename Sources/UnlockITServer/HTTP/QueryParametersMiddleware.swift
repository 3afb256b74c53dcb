import Hummingbird

/// Refuses a query on every API route that reads none (400 `unknown_field`, naming the first
/// parameter): `POST /users?dryRun=true` would otherwise create the user for real, and `GET
/// /rooms?name=Lab` answer with every room as if it had filtered them. The routes that do read
/// their query check its names themselves (``Request/queryParameters(known:)``).
///
/// On the API's group, so that it runs once the router has matched the route (and a path no route
/// has stays a 404).
struct QueryParametersMiddleware: RouterMiddleware {
    typealias Context = AppContext

    /// The routes that read their query, as `METHOD /path` with the router's path
    /// (`GET /api/v1/locks`). HEAD is GET's.
    let readers: Set<String>

    func handle(_ request: Request, context: AppContext, next: (Request, AppContext) async throws -> Response) async throws -> Response {
        if let (name, _) = request.uri.queryParameters.first {
            let method = request.method == .head ? HTTPRequest.Method.get : request.method
            guard readers.contains("\(method.rawValue) \(context.endpointPath ?? "")") else {
                throw APIError.unknownParameter(String(String(name).prefix(64)))
            }
        }
        return try await next(request, context)
    }
}
