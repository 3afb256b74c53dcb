import ArgumentParser
import Foundation
import UnlockITCore
import UnlockITLocalization

struct Rooms: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            abstract: L.current("help.rooms.abstract"), discussion: L.current("help.rooms.discussion"),
            subcommands: [List.self, Add.self, Show.self, Edit.self, Remove.self, Authorize.self, Deauthorize.self])
    }

    static func level(_ room: RoomModel, _ l: Localizer) -> String {
        room.requiredLevel.map { l.number($0) } ?? l("rooms.list_only")
    }

    struct List: AsyncParsableCommand {
        static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.rooms.list.abstract")) }
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, _) = try context.signedIn()
            let rooms: ItemsModel<RoomModel> = try await api.get("/api/v1/rooms")
            try context.output(rooms) {
                var table = Table([l("column.name"), l("column.type"), l("column.required_level"), l("column.bookable"), l("column.authorized")])
                for room in rooms.items {
                    table.add([
                        room.name, l("roomtype.\(room.type.rawValue)"), Rooms.level(room, l), context.yesNo(room.bookable),
                        l.number(room.authorizedUsers.count),
                    ])
                }
                return (rooms.items.isEmpty ? "" : table.rendered + "\n\n") + l.plural("rooms.count", count: rooms.items.count)
            }
        }
    }

    struct LevelOptions: ParsableArguments {
        @Option(help: ArgumentHelp(L.current("help.rooms.level"), valueName: "n")) var level: Int?
        @Flag(help: ArgumentHelp(L.current("help.rooms.list_only"))) var listOnly = false

        func validate() throws {
            if level != nil && listOnly { throw ValidationError(L.current("error.level_and_list_only")) }
        }
    }

    struct Add: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(abstract: L.current("help.rooms.add.abstract"), discussion: L.current("help.rooms.add.discussion"))
        }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.rooms.name"), valueName: "name")) var name: String
        @Option(help: ArgumentHelp(L.current("help.rooms.type"), valueName: "office|meeting|silent|cafeteria|other")) var type: RoomType = .office
        @OptionGroup var levels: LevelOptions
        @Flag(help: ArgumentHelp(L.current("help.rooms.bookable"))) var bookable = false
        @Option(help: ArgumentHelp(L.current("help.rooms.description"), valueName: "text")) var description: String?

        func validate() throws {
            if levels.level == nil && !levels.listOnly { throw ValidationError(L.current("error.level_required")) }
        }

        func run() async throws {
            let context = CommandContext(global)
            let (api, _) = try context.signedIn()
            struct Body: Encodable {
                var name: String
                var type: RoomType
                var requiredLevel: Int?
                var bookable: Bool
                var description: String?
            }
            let room: RoomModel = try await api.send(
                "POST", "/api/v1/rooms", Body(name: name, type: type, requiredLevel: levels.level, bookable: bookable, description: description))
            try context.output(room) { context.l("rooms.created", room.name, Rooms.level(room, context.l)) }
        }
    }

    struct Show: AsyncParsableCommand {
        static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.rooms.show.abstract")) }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.rooms.reference"), valueName: "room")) var room: String

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, _) = try context.signedIn()
            let found = try await Lookup(api: api).room(room)
            let users: ItemsModel<UserModel> = try await api.get("/api/v1/users")
            let locks: ItemsModel<LockModel> = try await api.get("/api/v1/locks?room=\(found.id)")
            let emails = Dictionary(uniqueKeysWithValues: users.items.map { ($0.id, $0.email) })
            try context.output(found) {
                var table = Table([l("column.field"), l("column.value")])
                table.add([l("column.name"), found.name])
                table.add([l("column.type"), l("roomtype.\(found.type.rawValue)")])
                table.add([l("column.required_level"), Rooms.level(found, l)])
                table.add([l("column.bookable"), context.yesNo(found.bookable)])
                table.add([l("column.description"), found.description.isEmpty ? "–" : found.description])
                let authorized = found.authorizedUsers.map { emails[$0] ?? $0 }.sorted()
                table.add([l("column.authorized"), authorized.isEmpty ? "–" : authorized.joined(separator: ", ")])
                table.add([l("column.locks"), locks.items.isEmpty ? "–" : locks.items.map(\.id).joined(separator: ", ")])
                table.add([l("column.id"), found.id])
                return table.rendered
            }
        }
    }

    struct Edit: AsyncParsableCommand {
        static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.rooms.edit.abstract")) }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.rooms.reference"), valueName: "room")) var room: String
        @Option(help: ArgumentHelp(L.current("help.rooms.new_name"), valueName: "name")) var name: String?
        @Option(help: ArgumentHelp(L.current("help.rooms.type"), valueName: "office|meeting|silent|cafeteria|other")) var type: RoomType?
        @OptionGroup var levels: LevelOptions
        @Flag(help: ArgumentHelp(L.current("help.rooms.bookable"))) var bookable = false
        @Flag(help: ArgumentHelp(L.current("help.rooms.not_bookable"))) var notBookable = false
        @Option(help: ArgumentHelp(L.current("help.rooms.description"), valueName: "text")) var description: String?

        func validate() throws {
            if bookable && notBookable { throw ValidationError(L.current("error.bookable_and_not")) }
            if name == nil && type == nil && levels.level == nil && !levels.listOnly && !bookable && !notBookable && description == nil {
                throw ValidationError(L.current("error.nothing_to_change"))
            }
        }

        func run() async throws {
            let context = CommandContext(global)
            let (api, _) = try context.signedIn()
            let found = try await Lookup(api: api).room(room)
            var body: [String: JSONValue] = [:]
            if let name { body["name"] = .string(name) }
            if let type { body["type"] = .string(type.rawValue) }
            if let level = levels.level { body["requiredLevel"] = .number(level) }
            if levels.listOnly { body["requiredLevel"] = .null }
            if bookable || notBookable { body["bookable"] = .bool(bookable) }
            if let description { body["description"] = .string(description) }
            let updated: RoomModel = try await api.send("PATCH", "/api/v1/rooms/\(found.id)", body)
            try context.output(updated) { context.l("rooms.updated", updated.name) }
        }
    }

    struct Remove: AsyncParsableCommand {
        static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.rooms.remove.abstract")) }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.rooms.reference"), valueName: "room")) var room: String
        @Flag(help: ArgumentHelp(L.current("help.option.yes"))) var yes = false

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, _) = try context.signedIn()
            let found = try await Lookup(api: api).room(room)
            try confirmOrRefuse(yes: yes, question: l("rooms.confirm_remove", found.name), l)
            try await api.perform("DELETE", "/api/v1/rooms/\(found.id)")
            try context.output(found) { l("rooms.removed", found.name) }
        }
    }

    struct Authorize: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(abstract: L.current("help.rooms.authorize.abstract"), discussion: L.current("help.rooms.authorize.discussion"))
        }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.rooms.reference"), valueName: "room")) var room: String
        @Argument(help: ArgumentHelp(L.current("help.users.reference"), valueName: "user")) var user: String

        func run() async throws {
            try await Rooms.setAuthorization(true, room: room, user: user, global: global)
        }
    }

    struct Deauthorize: AsyncParsableCommand {
        static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.rooms.deauthorize.abstract")) }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.rooms.reference"), valueName: "room")) var room: String
        @Argument(help: ArgumentHelp(L.current("help.users.reference"), valueName: "user")) var user: String

        func run() async throws {
            try await Rooms.setAuthorization(false, room: room, user: user, global: global)
        }
    }

    static func setAuthorization(_ authorized: Bool, room: String, user: String, global: GlobalOptions) async throws {
        let context = CommandContext(global)
        let (api, _) = try context.signedIn()
        let lookup = Lookup(api: api)
        let foundRoom = try await lookup.room(room)
        let foundUser = try await lookup.user(user)
        let updated: RoomModel = try await api.send(authorized ? "PUT" : "DELETE", "/api/v1/rooms/\(foundRoom.id)/authorized-users/\(foundUser.id)")
        try context.output(updated) {
            authorized
                ? context.l("rooms.authorized", foundUser.email, updated.name) : context.l("rooms.deauthorized", foundUser.email, updated.name)
        }
    }
}

extension RoomType: ExpressibleByArgument {}

/// A JSON value, for PATCH bodies where `null` means something.
enum JSONValue: Encodable {
    case string(String)
    case number(Int)
    case bool(Bool)
    case null

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }
}
