import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import UnlockITCore

/// A failure the API reports as RFC 9457 problem+json with a stable machine `code`.
///
/// ```json
/// {"type":"urn:unlockit:problem:access_denied","title":"Access denied","status":403,
///  "code":"access_denied","detail":"…","reason":"level_too_low"}
/// ```
public struct APIError: Error, HTTPResponseError, Sendable, Equatable {
    public var status: HTTPResponse.Status
    public var code: ProblemCode
    public var title: String
    public var detail: String?
    /// For access denials and lock outcomes: the machine-readable reason.
    public var reason: String?
    public var headers: HTTPFields = [:]

    public init(_ status: HTTPResponse.Status, code: ProblemCode, title: String, detail: String? = nil, reason: String? = nil) {
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.reason = reason
    }

    struct Body: Encodable {
        var type: String
        var title: String
        var status: Int
        var code: ProblemCode
        var detail: String?
        var reason: String?
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/problem+json"
        let body = Body(type: "urn:unlockit:problem:\(code.rawValue)", title: title, status: status.code, code: code, detail: detail, reason: reason)
        let data = (try? APIJSON.encoder.encode(body)) ?? Data()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension APIError {
    // 400
    static func invalidRequest(_ detail: String) -> APIError {
        APIError(.badRequest, code: .invalidRequest, title: "The request is not valid", detail: detail)
    }
    static func invalidField(_ field: String, _ detail: String) -> APIError {
        APIError(.badRequest, code: .invalidField, title: "A field is not valid", detail: "\(field): \(detail)")
    }
    static let malformedJSON = APIError(.badRequest, code: .malformedJSON, title: "The body is not valid JSON")
    static func unknownField(_ name: String) -> APIError {
        APIError(.badRequest, code: .unknownField, title: "Unknown field", detail: "\"\(name)\" is not a field of this request")
    }
    static func unknownParameter(_ name: String) -> APIError {
        APIError(.badRequest, code: .unknownField, title: "Unknown query parameter", detail: "\"\(name)\" is not a parameter of this request")
    }
    static func invalidID(_ what: String) -> APIError {
        APIError(.badRequest, code: .invalidID, title: "Not a valid id", detail: "\(what) is not a valid id")
    }
    static let weakPassword = APIError(
        .badRequest, code: .weakPassword, title: "Password not accepted",
        detail:
            "Passwords must be 12 to 128 characters long, without control characters, and not a piece repeated, a run along the "
            + "alphabet, the digits or a keyboard row, or the service's name or the user's email or name with only digits, spaces or "
            + "punctuation around it.")

    // 401, 403, 511
    static let unauthenticated = APIError(
        .unauthorized, code: .unauthenticated, title: "Sign in required", detail: "The session is missing, expired or was revoked.")
    static let invalidCredentials = APIError(.unauthorized, code: .invalidCredentials, title: "Wrong email or password")
    static let wrongPassword = APIError(.forbidden, code: .wrongPassword, title: "The current password is wrong")
    static let passwordChangeRequired = APIError(
        .forbidden, code: .passwordChangeRequired, title: "Choose your own password first",
        detail: "This account still has the password an admin gave it. Change it with POST /api/v1/me/password.")
    static let adminRequired = APIError(.forbidden, code: .adminRequired, title: "Only an admin may do this")
    static let userDisabled = APIError(
        .forbidden, code: .userDisabled, title: "This account is disabled", detail: "Ask an admin of your company to enable it.")
    static let idTokenInvalid = APIError(
        .networkAuthenticationRequired, code: .idTokenInvalid, title: "The ID token could not be verified")
    static let noAccount = APIError(
        .forbidden, code: .noAccount, title: "No UnlockIT account", detail: "No enabled account has this verified email address.")

    // 404, 409, 413, 422
    static func notFound(_ code: ProblemCode) -> APIError {
        APIError(.notFound, code: code, title: "Not found", detail: "Nothing with that id in your company.")
    }
    static func conflict(_ code: ProblemCode, _ title: String) -> APIError { APIError(.conflict, code: code, title: title) }
    static let routeNotFound = APIError(.notFound, code: .routeNotFound, title: "No such endpoint")
    static let methodNotAllowed = APIError(.methodNotAllowed, code: .methodNotAllowed, title: "Method not allowed")

    /// A 405 that names the methods the path does answer, in `Allow` and in the detail.
    static func methodNotAllowed(allow methods: [HTTPRequest.Method]) -> APIError {
        let list = methods.map(\.rawValue).joined(separator: ", ")
        var error = APIError(.methodNotAllowed, code: .methodNotAllowed, title: "Method not allowed", detail: "This path answers \(list).")
        error.headers[.allow] = list
        return error
    }
    static let bodyTooLarge = APIError(.contentTooLarge, code: .bodyTooLarge, title: "The request body is too large")
    static let internalError = APIError(.internalServerError, code: .internalError, title: "Something went wrong on the server")

    // 429
    /// A client over its sign-in rate, with how long to wait.
    static func tooManySignIns(retryAfter wait: Duration) -> APIError {
        tooMany(.tooManyRequests, title: "Too many sign-in attempts from this address", detail: "Wait before trying again.", retryAfter: wait)
    }

    /// A user over their denied unlock attempts (``DeniedUnlockLimiter``), with how long to wait.
    static func tooManyDeniedUnlocks(retryAfter wait: Duration) -> APIError {
        tooMany(
            .tooManyDeniedUnlocks, title: "Too many of your unlock attempts were denied",
            detail: "Unlocking is paused for you. Wait before trying again.", retryAfter: wait)
    }

    /// A user over their unlock attempts of any outcome (``RateLimiter``), with how long to wait.
    static func tooManyUnlocks(retryAfter wait: Duration) -> APIError {
        tooMany(
            .tooManyUnlocks, title: "Too many unlock attempts", detail: "Unlocking is paused for you. Wait before trying again.",
            retryAfter: wait)
    }

    static func tooManyTakenEmails(retryAfter wait: Duration) -> APIError {
        tooMany(
            .tooManyTakenEmails, title: "Too many of the email addresses tried are in use by other companies",
            detail: "Creating, importing and renaming users is paused for this company. Wait before trying again.", retryAfter: wait)
    }

    static func tooManyTakenLockIDs(retryAfter wait: Duration) -> APIError {
        tooMany(
            .tooManyTakenLockIDs, title: "Too many of the device ids tried are registered by other companies",
            detail: "Registering locks is paused for this company. Wait before trying again.", retryAfter: wait)
    }

    static func tooManyWrongSetupCodes(retryAfter wait: Duration) -> APIError {
        tooMany(
            .tooManyWrongSetupCodes, title: "Too many wrong setup codes",
            detail: "Registering factory device ids and activating locks is paused for this company. Wait before trying again.",
            retryAfter: wait)
    }

    /// 429 with `Retry-After` in whole seconds, rounded up, at least one.
    private static func tooMany(_ code: ProblemCode, title: String, detail: String, retryAfter wait: Duration) -> APIError {
        var error = APIError(.tooManyRequests, code: code, title: title, detail: detail)
        error.headers[.retryAfter] = String(max(1, Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0)))
        return error
    }

    // 503
    /// Too many password hashes are already queued: try again in a second.
    static let serverBusy = busy(detail: "Too many sign-ins and password changes are waiting. Try again shortly.")

    /// The audit log's write queue is full (the disk is failing or far behind): no door opens
    /// without room for its record.
    static let auditBehind = busy(detail: "The audit log is behind. Try again shortly.")

    /// Another change to the same lock (its registration, activation, retirement or broker password)
    /// has been under way for too long.
    static let lockAccountBusy = busy(detail: "Another change to this lock is under way. Try again shortly.")

    /// The OpenID Connect issuer's keys could not be loaded; they are fetched again at most every 30 s.
    static var identityProviderUnavailable: APIError {
        var error = APIError(
            .serviceUnavailable, code: .identityProviderUnavailable, title: "The identity provider's keys could not be loaded",
            detail: "Try again shortly, or sign in with a password.")
        error.headers[.retryAfter] = "30"
        return error
    }

    /// 503 `server_busy`, to be retried after a second.
    private static func busy(detail: String) -> APIError {
        var error = APIError(.serviceUnavailable, code: .serverBusy, title: "The server is busy", detail: detail)
        error.headers[.retryAfter] = "1"
        return error
    }
}
