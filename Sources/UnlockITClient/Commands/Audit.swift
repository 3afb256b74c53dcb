import ArgumentParser
import Foundation
import UnlockITCore
import UnlockITLocalization

struct Audit: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(abstract: L.current("help.audit.abstract"), discussion: L.current("help.audit.discussion"))
    }

    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp(L.current("help.audit.user"), valueName: "user")) var user: String?
    @Option(help: ArgumentHelp(L.current("help.audit.lock"), valueName: "lock")) var lock: String?
    @Option(help: ArgumentHelp(L.current("help.audit.room"), valueName: "room")) var room: String?
    @Option(help: ArgumentHelp(L.current("help.audit.action"), valueName: "action")) var action: AuditAction?
    @Option(help: ArgumentHelp(L.current("help.audit.outcome"), valueName: "success|denied|error")) var outcome: AuditOutcome?
    @Option(help: ArgumentHelp(L.current("help.audit.from"), valueName: "time")) var from: String?
    @Option(help: ArgumentHelp(L.current("help.audit.to"), valueName: "time")) var to: String?
    @Option(help: ArgumentHelp(L.current("help.audit.limit"), valueName: "n")) var limit: Int = 50
    @Option(help: ArgumentHelp(L.current("help.audit.before"), valueName: "id")) var before: Int64?

    func validate() throws {
        guard (1...1000).contains(limit) else { throw ValidationError(L.current("error.bad_limit")) }
        // An event id, as a page's end gives it: the server would refuse anything else, in English.
        if let before, before < 1 { throw ValidationError(L.current("error.bad_before")) }
        for time in [from, to].compactMap({ $0 }) where Self.date(time) == nil {
            throw ValidationError(L.current("error.bad_time", time))
        }
    }

    /// `2026-11-22`, `2026-11-22T08:00:00Z` or with an offset.
    static func date(_ text: String) -> Date? {
        if let date = ISO8601DateFormatter().date(from: text) { return date }
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        return day.date(from: text)
    }

    func run() async throws {
        let context = CommandContext(global)
        let l = context.l
        let (api, _) = try context.signedIn()
        let lookup = Lookup(api: api)
        var query: [String] = ["limit=\(limit)"]
        // The log outlives the users and rooms it names: an id is used as given, not looked up.
        if let user { query.append("user=\(try await lookup.userID(user))") }
        if let lock { query.append("lock=\(try lookup.lockID(lock))") }
        if let room { query.append("room=\(try await lookup.roomID(room))") }
        if let action { query.append("action=\(action.rawValue)") }
        if let outcome { query.append("outcome=\(outcome.rawValue)") }
        let iso = ISO8601DateFormatter()
        if let from, let date = Self.date(from) { query.append("from=\(iso.string(from: date).queryEncoded)") }
        if let to, let date = Self.date(to) { query.append("to=\(iso.string(from: date).queryEncoded)") }
        if let before { query.append("before=\(before)") }
        let page: AuditPageModel = try await api.get("/api/v1/audit?" + query.joined(separator: "&"))
        if context.json {
            try context.printJSON(page)
            return
        }
        let users: ItemsModel<UserModel> = try await api.get("/api/v1/users")
        let rooms: ItemsModel<RoomModel> = try await api.get("/api/v1/rooms")
        let emails = Dictionary(uniqueKeysWithValues: users.items.map { ($0.id, $0.email) })
        let roomNames = Dictionary(uniqueKeysWithValues: rooms.items.map { ($0.id, $0.name) })
        var table = Table([
            l("column.time"), l("column.action"), l("column.outcome"), l("column.reason"), l("column.who"), l("column.about"), l("column.lock"),
            l("column.room"), l("column.changes"),
        ])
        for event in page.items {
            table.add([
                context.date(event.at), l.has("action.\(event.action)") ? l("action.\(event.action)") : event.action,
                l.has("outcome.\(event.outcome)") ? l("outcome.\(event.outcome)") : event.outcome,
                event.reason.map { Self.reasonText($0, l) } ?? "–", event.actorId.map { emails[$0] ?? $0 } ?? "–",
                event.subjectId.map { emails[$0] ?? $0 } ?? "–", event.lockId ?? "–", event.roomId.map { roomNames[$0] ?? $0 } ?? "–",
                Self.changes(event.changes ?? [], rooms: roomNames, context),
            ])
        }
        Terminal.line(page.items.isEmpty ? l("audit.none") : table.rendered)
        if let next = page.nextBefore { Terminal.line(l("audit.more", next)) }
    }
}

extension Audit {
    /// The reasons the access rule gives in the second person, for the user it decides on
    /// (`unlockit access`, a refused unlock); the audit log, which an admin reads, says them of the
    /// user instead (`audit.reason.*`).
    static let personalReasons: Set<String> = ["authorized_user", "level_sufficient", "level_too_low", "user_disabled"]

    /// Why an event came out as it did, as the audit log says it.
    static func reasonText(_ reason: String, _ l: Localizer) -> String {
        personalReasons.contains(reason) ? l("audit.reason.\(reason)") : CLIError.reasonText(reason, l)
    }

    /// What an admin change set, in the user's language: `Role: employee → admin; Level: 1 → 9`
    /// (a room by its name while it exists).
    static func changes(_ changes: [AuditChangeModel], rooms: [String: String], _ context: CommandContext) -> String {
        guard !changes.isEmpty else { return "–" }
        let l = context.l
        let labels = [
            "role": "column.role", "securityLevel": "column.level", "enabled": "column.enabled", "email": "column.email", "name": "column.name",
            "requiredLevel": "column.required_level", "type": "column.type", "bookable": "column.bookable", "description": "column.description",
            "roomId": "column.room", "state": "column.state",
        ]
        func value(_ field: String, _ text: String?) -> String {
            guard let text else { return "–" }
            switch field {
            case "role" where l.has("role.\(text)"): return l("role.\(text)")
            case "type" where l.has("roomtype.\(text)"): return l("roomtype.\(text)")
            case "state" where l.has("state.\(text)"): return l("state.\(text)")
            case "enabled", "bookable": return Bool(text).map(context.yesNo) ?? text
            case "roomId": return rooms[text] ?? text
            default: return text
            }
        }
        return changes.map { change in
            let label = labels[change.field].map { l($0) } ?? change.field
            return "\(label): \(value(change.field, change.from)) → \(value(change.field, change.to))"
        }.joined(separator: "; ")
    }
}

extension AuditAction: ExpressibleByArgument {}
extension AuditOutcome: ExpressibleByArgument {}
