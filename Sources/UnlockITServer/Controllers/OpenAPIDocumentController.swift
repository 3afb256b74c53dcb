import Foundation
import Hummingbird
import NIOCore

/// The OpenAPI document, on the API's own address: what the API answers is no secret.
struct OpenAPIDocumentController {
    /// Read from the bundle once, on the first request for it, not from the disk for every request:
    /// anyone may ask, signed in or not, and 107 KB a time would make a cheap way to keep the disk busy.
    private static let document: ByteBuffer? = Bundle.module.url(forResource: "openapi", withExtension: "json")
        .flatMap { try? Data(contentsOf: $0) }.map { ByteBuffer(bytes: $0) }

    func addRoutes(to router: Router<AppContext>) {
        router.get("api/v1/openapi.json", use: document)
    }

    @Sendable func document(request: Request, context: AppContext) async throws -> Response {
        guard let document = Self.document else { throw APIError.internalError }
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: document))
    }
}
