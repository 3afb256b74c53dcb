import Foundation
import Hummingbird
import UnlockITCore

/// Admin: the company's audit log, newest first, filtered and paginated by cursor.
struct AuditController {
    let services: AppServices

    struct Page: ResponseCodable {
        var items: [AuditEventResponse]
        /// Pass as `before` to get the next (older) page; absent on the last page.
        var nextBefore: Int64?
    }

    func addRoutes(to group: RouterGroup<AppContext>) {
        group.get("audit", use: list)
    }

    @Sendable func list(request: Request, context: AppContext) async throws -> Page {
        let admin = try context.requireIdentity().user
        let parameters = try request.queryParameters(known: ["user", "lock", "room", "action", "outcome", "from", "to", "before", "limit"])
        func parameter(_ name: String) -> String? { parameters[name] }
        var query = AuditQuery(companyID: admin.companyID)
        if let text = parameter("user") {
            guard let id = UserID(text) else { throw APIError.invalidID("user") }
            query.userID = id
        }
        if let text = parameter("lock") {
            guard let id = LockID(text) else { throw APIError.invalidID("lock") }
            query.lockID = id
        }
        if let text = parameter("room") {
            guard let id = RoomID(text) else { throw APIError.invalidID("room") }
            query.roomID = id
        }
        if let text = parameter("action") {
            guard let action = AuditAction(rawValue: text) else { throw APIError.invalidField("action", "unknown action") }
            query.action = action
        }
        if let text = parameter("outcome") {
            guard let outcome = AuditOutcome(rawValue: text) else { throw APIError.invalidField("outcome", "success, denied or error") }
            query.outcome = outcome
        }
        if let text = parameter("from") { query.from = try Self.date(text, "from") }
        if let text = parameter("to") { query.to = try Self.date(text, "to") }
        if let text = parameter("before") {
            guard let before = Int64(text), before > 0 else { throw APIError.invalidField("before", "a positive event id") }
            query.before = before
        }
        if let text = parameter("limit") {
            guard let limit = Int(text), (1...1000).contains(limit) else { throw APIError.invalidField("limit", "1 to 1000") }
            query.limit = limit
        }
        let events = try await services.store.auditEvents(query)
        return Page(items: events.map(AuditEventResponse.init), nextBefore: events.count == query.limit ? events.last?.id : nil)
    }

    /// An RFC 3339 date and time, as the API document's `date-time` says: any offset, with or
    /// without fractional seconds.
    static func date(_ text: String, _ field: String) throws -> Date {
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = ISO8601DateFormatter().date(from: text) ?? fractional.date(from: text) else {
            throw APIError.invalidField(field, "an ISO 8601 date and time such as 2026-11-22T08:00:00Z")
        }
        return date
    }
}
