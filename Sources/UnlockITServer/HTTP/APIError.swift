import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// A failure the API reports as RFC 9457 problem+json with a stable machine `code`.
///
/// ```json
/// {"type":"urn:unlockit:problem:access_denied","title":"Access denied","status":403,
///  "code":"access_denied","detail":"…","reason":"level_too_low"}
/// ```
public struct APIError: Error, HTTPResponseError, Sendable, Equatable {
    public var status: HTTPResponse.Status
    public var code: String
    public var title: String
    public var detail: String?
    /// For access denials and lock outcomes: the machine-readable reason.
    public var reason: String?
    public var headers: HTTPFields = [:]

    public init(_ status: HTTPResponse.Status, code: String, title: String, detail: String? = nil, reason: String? = nil) {
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
        var code: String
        var detail: String?
        var reason: String?
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/problem+json"
        let body = Body(type: "urn:unlockit:problem:\(code)", title: title, status: status.code, code: code, detail: detail, reason: reason)
        let data = (try? APIJSON.encoder.encode(body)) ?? Data()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension APIError {
    // 400
    static func invalidRequest(_ detail: String) -> APIError {
        APIError(.badRequest, code: "invalid_request", title: "The request is not valid", detail: detail)
    }
    static func invalidField(_ field: String, _ detail: String) -> APIError {
        APIError(.badRequest, code: "invalid_field", title: "A field is not valid", detail: "\(field): \(detail)")
    }
    static let malformedJSON = APIError(.badRequest, code: "malformed_json", title: "The body is not valid JSON")
    static func invalidID(_ what: String) -> APIError {
        APIError(.badRequest, code: "invalid_id", title: "Not a valid id", detail: "\(what) is not a valid id")
    }
    static let weakPassword = APIError(
        .badRequest, code: "weak_password", title: "Password not accepted", detail: "Passwords must be 12 to 128 characters long.")

    // 401, 403, 511
    static let unauthenticated = APIError(
        .unauthorized, code: "unauthenticated", title: "Sign in required", detail: "The session is missing, expired or was revoked.")
    static let invalidCredentials = APIError(.unauthorized, code: "invalid_credentials", title: "Wrong email or password")
    static let wrongPassword = APIError(.forbidden, code: "wrong_password", title: "The current password is wrong")
    static let passwordChangeRequired = APIError(
        .forbidden, code: "password_change_required", title: "Choose your own password first",
        detail: "This account still has the password an admin gave it. Change it with POST /api/v1/me/password.")
    static let adminRequired = APIError(.forbidden, code: "admin_required", title: "Only an admin may do this")
    static let userDisabled = APIError(
        .forbidden, code: "user_disabled", title: "This account is disabled", detail: "Ask an admin of your company to enable it.")
    static let idTokenInvalid = APIError(
        .networkAuthenticationRequired, code: "id_token_invalid", title: "The ID token could not be verified")
    static let noAccount = APIError(
        .forbidden, code: "no_account", title: "No UnlockIT account", detail: "No enabled account has this verified email address.")

    // 404, 409, 413, 422
    static func notFound(_ what: String) -> APIError {
        APIError(.notFound, code: "\(what)_not_found", title: "Not found", detail: "No \(what) with that id.")
    }
    static func conflict(_ code: String, _ title: String) -> APIError { APIError(.conflict, code: code, title: title) }
    static let routeNotFound = APIError(.notFound, code: "route_not_found", title: "No such endpoint")
    static let methodNotAllowed = APIError(.methodNotAllowed, code: "method_not_allowed", title: "Method not allowed")
    static let bodyTooLarge = APIError(.contentTooLarge, code: "body_too_large", title: "The request body is too large")
    static let internalError = APIError(.internalServerError, code: "internal_error", title: "Something went wrong on the server")
}
