import Foundation
import Hummingbird
import Logging
import NIOCore
import UnlockITCore

/// Turns every failure into problem+json (never a stack trace, never a bare 500 for bad input) and
/// records each request in the metrics by its listener and route pattern.
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = AppContext
    let metrics: ServerMetrics
    let listener: UnlockITApp.Listener

    func handle(_ request: Request, context: AppContext, next: (Request, AppContext) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            let problem = Self.problem(for: error, logger: context.logger)
            response = try problem.response(from: request, context: context)
        }
        metrics.request(
            listener: listener.rawValue, method: request.method.rawValue, route: context.endpointPath ?? "unmatched", status: response.status.code,
            duration: start.duration(to: .now))
        return response
    }

    static func problem(for error: any Error, logger: Logger) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as StoreError:
            return problem(for: error)
        case is DecodingError:
            return decodingProblem(error as! DecodingError)
        case let error as HTTPError:
            switch error.status {
            case .notFound: return .routeNotFound
            case .methodNotAllowed: return .methodNotAllowed
            case .contentTooLarge: return .bodyTooLarge
            case .unauthorized: return .unauthenticated
            default:
                let code: ProblemCode = error.status.code < 500 ? .invalidRequest : .internalError
                return APIError(error.status, code: code, title: error.status.reasonPhrase, detail: error.body)
            }
        case is AsyncLimiter.Saturated:
            return .serverBusy
        case let error as NIOTooManyBytesError:
            _ = error
            return .bodyTooLarge
        default:
            logger.error("unhandled error", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            return .internalError
        }
    }

    static func problem(for error: StoreError) -> APIError {
        switch error {
        case .notFound: .notFound(.resourceNotFound)
        case .emailTaken: .conflict(.emailTaken, "That email address is already in use")
        case .roomNameTaken: .conflict(.roomNameTaken, "A room with that name already exists")
        case .lockIDTaken: .conflict(.lockIDTaken, "A lock with that device id is already registered")
        case .lastAdmin: .conflict(.lastAdmin, "The company must keep at least one enabled admin")
        case .roomHasLocks: .conflict(.roomHasLocks, "Retire or move the room's locks first")
        case .lockRetired: .conflict(.lockRetired, "The lock is retired")
        case .roomNotFound: .notFound(.roomNotFound)
        case .credentialsChanged: .invalidCredentials
        case .userDisabled: .userDisabled
        case .noPassword: .conflict(.noPassword, "The user signs in with OpenID Connect only and has no password to reset")
        case .idTokenSpent: .idTokenInvalid
        case .identityMismatch: .idTokenInvalid
        case .sessionEnded: .unauthenticated
        case .adminRequired: .adminRequired
        }
    }

    static func decodingProblem(_ error: DecodingError) -> APIError {
        /// A field as a client writes it: `users[0].email`.
        func path(_ keys: [any CodingKey]) -> String {
            var path = ""
            for key in keys {
                if let index = key.intValue {
                    path += "[\(index)]"
                } else {
                    path += (path.isEmpty ? "" : ".") + key.stringValue
                }
            }
            return path.isEmpty ? "body" : path
        }
        func path(_ context: DecodingError.Context) -> String { path(context.codingPath) }
        switch error {
        case .keyNotFound(let key, let context):
            return .invalidField(path(context.codingPath + [key]), "is required")
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return .invalidField(path(context), "has the wrong type")
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return .malformedJSON }
            // Only a reason written for clients: Foundation's own text names Swift types.
            return .invalidField(path(context), (context.underlyingError as? InvalidValue)?.reason ?? "is not a valid value")
        @unknown default:
            return .malformedJSON
        }
    }
}
