import Foundation
import Hummingbird
import NIOCore

/// The OpenAPI document, on the API's own address: what the API answers is no secret.
struct OpenAPIDocumentController {
    func addRoutes(to router: Router<AppContext>) {
        router.get("api/v1/openapi.json", use: document)
    }

    @Sendable func document(request: Request, context: AppContext) async throws -> Response {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json"), let data = try? Data(contentsOf: url) else {
            throw APIError.internalError
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
