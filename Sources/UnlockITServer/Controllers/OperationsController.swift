import Foundation
import Hummingbird
import NIOCore
import UnlockITCore

/// `/healthz`, `/metrics` and the OpenAPI document: for operators and their tools.
struct OperationsController {
    let services: AppServices
    let brokerReady: @Sendable () -> Bool

    struct Health: ResponseCodable {
        var status: String
        var database: String
        var broker: String
        var locksOnline: Int
    }

    func addRoutes(to router: Router<AppContext>) {
        router.get("healthz", use: health)
        router.get("metrics", use: metrics)
        router.get("api/v1/openapi.json", use: openAPI)
    }

    /// 200 when the database answers and the broker link is ready, 503 otherwise; the body says which.
    @Sendable func health(request: Request, context: AppContext) async throws -> EditedResponse<Health> {
        let databaseOK: Bool
        do {
            _ = try await services.store.setting(MasterKeyCheck.settingName)
            databaseOK = true
        } catch {
            databaseOK = false
        }
        let brokerOK = brokerReady()
        let health = Health(
            status: databaseOK && brokerOK ? "ok" : "degraded", database: databaseOK ? "ok" : "unavailable",
            broker: brokerOK ? "connected" : "disconnected", locksOnline: services.gateway.presence.onlineCount)
        return EditedResponse(status: databaseOK && brokerOK ? .ok : .serviceUnavailable, response: health)
    }

    @Sendable func metrics(request: Request, context: AppContext) async throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: services.metrics.exposition())))
    }

    @Sendable func openAPI(request: Request, context: AppContext) async throws -> Response {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json"), let data = try? Data(contentsOf: url) else {
            throw APIError.internalError
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
