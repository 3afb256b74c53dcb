import Hummingbird
import NIOCore
import UnlockITCore

/// `/healthz` and `/metrics`: for operators and their tools, on the operations listener alone
/// (``ServerConfiguration/operationsHost``). Their figures span every company, and they answer
/// without a session.
struct OperationsController {
    let services: AppServices
    let brokerReady: @Sendable () -> Bool
    let shutdown: ShutdownState

    struct Health: ResponseCodable {
        var status: String
        var database: String
        var broker: String
        var locksOnline: Int
    }

    func addRoutes(to router: Router<AppContext>) {
        router.get("healthz", use: health)
        router.get("metrics", use: metrics)
    }

    /// 200 when the database answers and the broker link is ready, 503 otherwise; the body says which.
    /// Once the server has begun to shut down, 503 `shutting_down` whatever the rest.
    @Sendable func health(request: Request, context: AppContext) async throws -> EditedResponse<Health> {
        let databaseOK: Bool
        do {
            _ = try await services.store.setting(MasterKeyCheck.settingName)
            databaseOK = true
        } catch {
            databaseOK = false
        }
        let brokerOK = brokerReady()
        // Read once: the status and the answer's code must agree.
        let shuttingDown = shutdown.hasBegun
        let ready = databaseOK && brokerOK && !shuttingDown
        let health = Health(
            status: shuttingDown ? "shutting_down" : ready ? "ok" : "degraded", database: databaseOK ? "ok" : "unavailable",
            broker: brokerOK ? "connected" : "disconnected", locksOnline: services.gateway.presence.onlineCount)
        return EditedResponse(status: ready ? .ok : .serviceUnavailable, response: health)
    }

    @Sendable func metrics(request: Request, context: AppContext) async throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: services.metrics.exposition())))
    }
}
