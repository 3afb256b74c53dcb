import ArgumentParser
import Foundation
import UnlockITCore
import UnlockITLocalization

struct Locks: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            abstract: L.current("help.locks.abstract"), discussion: L.current("help.locks.discussion"),
            subcommands: [List.self, Add.self, Activate.self, Show.self, Edit.self, BrokerPassword.self, Retire.self])
    }

    /// The setup code, typed without echo: with a captured activation message it gives the device
    /// key away, and on the command line it would land in the shell's history.
    static func askSetupCode(_ l: Localizer) throws -> String {
        try Terminal.askSecret(l("prompt.setup_code")).orThrow(CLIError.usage(l("error.no_setup_code"), l))
    }

    /// What was done, the broker credentials (shown once), and what to do next.
    static func credentials(_ model: RegisteredLockModel, done: String, next: String, _ l: Localizer) -> String {
        [done, l("locks.credentials", model.mqtt.broker, model.mqtt.username, model.mqtt.password), next].joined(separator: "\n")
    }

    struct List: AsyncParsableCommand {
        static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.locks.list.abstract")) }
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, _) = try context.signedIn()
            let locks: ItemsModel<LockModel> = try await api.get("/api/v1/locks")
            let rooms: ItemsModel<RoomModel> = try await api.get("/api/v1/rooms")
            let roomNames = Dictionary(uniqueKeysWithValues: rooms.items.map { ($0.id, $0.name) })
            try context.output(locks) {
                var table = Table([
                    l("column.lock"), l("column.name"), l("column.room"), l("column.state"), l("column.online"), l("column.last_seen"),
                ])
                for lock in locks.items {
                    table.add([
                        lock.id, lock.name, lock.roomId.flatMap { roomNames[$0] } ?? "–", l("state.\(lock.state.rawValue)"),
                        context.yesNo(lock.online),
                        context.date(lock.lastSeen),
                    ])
                }
                return (locks.items.isEmpty ? "" : table.rendered + "\n\n") + l.plural("locks.count", count: locks.items.count)
            }
        }
    }

    struct Add: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(abstract: L.current("help.locks.add.abstract"), discussion: L.current("help.locks.add.discussion"))
        }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.locks.id"), valueName: "lock")) var lock: String
        @Option(help: ArgumentHelp(L.current("help.locks.name"), valueName: "name")) var name: String
        @Option(help: ArgumentHelp(L.current("help.rooms.reference"), valueName: "room")) var room: String
        @Option(help: ArgumentHelp(L.current("help.locks.add.setup_code"), valueName: "code")) var setupCode: String?

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, _) = try context.signedIn()
            let lookup = Lookup(api: api)
            let id = try lookup.lockID(lock)
            let foundRoom = try await lookup.room(room)
            var body = ["id": id, "name": name, "roomId": foundRoom.id]
            // A factory device id is registered only with its setup code: asked for as activation
            // asks, unless given.
            if let code = try setupCode ?? LockID(id).flatMap({ $0.hasFactoryForm ? try Locks.askSetupCode(l) : nil }) {
                body["setupCode"] = code
            }
            let registered: RegisteredLockModel
            do {
                registered = try await api.send("POST", "/api/v1/locks", body)
            } catch let error as CLIError where error.answerMissing {
                // Its broker password was in the answer: a lock registered now has none anyone knows.
                throw error.missingAnswer(noAnswer: l("error.lock_add_no_answer", id), hint: l("hint.lock_add_no_answer", id, id), l)
            }
            try context.output(registered) {
                Locks.credentials(registered, done: l("locks.registered", registered.lock.id, foundRoom.name), next: l("locks.next_step", id), l)
            }
        }
    }

    struct Activate: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(abstract: L.current("help.locks.activate.abstract"), discussion: L.current("help.locks.activate.discussion"))
        }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.locks.id"), valueName: "lock")) var lock: String
        @Option(help: ArgumentHelp(L.current("help.locks.setup_code"), valueName: "code")) var setupCode: String?

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, _) = try context.signedIn()
            let id = try Lookup(api: api).lockID(lock)
            let code = try setupCode ?? Locks.askSetupCode(l)
            let activated: LockModel
            do {
                activated = try await api.send("POST", "/api/v1/locks/\(id)/activate", ["setupCode": code])
            } catch let error as CLIError where error.problemCode == ProblemCode.lockDenied.rawValue {
                // Not an unlock the lock refused: it did not take the pairing.
                throw CLIError(l("error.activation_refused", id), hint: l("hint.activation_refused"), status: .failure)
            }
            try context.output(activated) { l("locks.activated", activated.id) }
        }
    }

    struct Show: AsyncParsableCommand {
        static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.locks.show.abstract")) }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.locks.id"), valueName: "lock")) var lock: String

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, _) = try context.signedIn()
            let found: LockModel = try await api.get("/api/v1/locks/\(try Lookup(api: api).lockID(lock))")
            let roomName = try await found.roomId.asyncMap { id -> String in
                let room: RoomModel = try await api.get("/api/v1/rooms/\(id)")
                return room.name
            }
            try context.output(found) {
                var table = Table([l("column.field"), l("column.value")])
                table.add([l("column.lock"), found.id])
                table.add([l("column.name"), found.name])
                table.add([l("column.room"), roomName ?? "–"])
                table.add([l("column.state"), l("state.\(found.state.rawValue)")])
                table.add([l("column.online"), context.yesNo(found.online)])
                table.add([l("column.last_seen"), context.date(found.lastSeen)])
                table.add([l("column.firmware"), found.firmwareVersion ?? "–"])
                table.add([l("column.activated"), context.date(found.activatedAt)])
                return table.rendered
            }
        }
    }

    struct Edit: AsyncParsableCommand {
        static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.locks.edit.abstract")) }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.locks.id"), valueName: "lock")) var lock: String
        @Option(help: ArgumentHelp(L.current("help.rooms.new_name"), valueName: "name")) var name: String?
        @Option(help: ArgumentHelp(L.current("help.locks.new_room"), valueName: "room")) var room: String?

        func validate() throws {
            if name == nil && room == nil { throw ValidationError(L.current("error.nothing_to_change")) }
        }

        func run() async throws {
            let context = CommandContext(global)
            let (api, _) = try context.signedIn()
            let lookup = Lookup(api: api)
            let id = try lookup.lockID(lock)
            var body: [String: String] = [:]
            if let name { body["name"] = name }
            if let room { body["roomId"] = try await lookup.roomID(room) }
            let updated: LockModel = try await api.send("PATCH", "/api/v1/locks/\(id)", body)
            try context.output(updated) { context.l("locks.updated", updated.id) }
        }
    }

    struct BrokerPassword: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(
                commandName: "broker-password", abstract: L.current("help.locks.broker_password.abstract"),
                discussion: L.current("help.locks.broker_password.discussion"))
        }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.locks.id"), valueName: "lock")) var lock: String
        @Flag(help: ArgumentHelp(L.current("help.option.yes"))) var yes = false

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, _) = try context.signedIn()
            let id = try Lookup(api: api).lockID(lock)
            try confirmOrRefuse(yes: yes, question: l("locks.confirm_broker_password", id), l)
            let reset: RegisteredLockModel
            do {
                reset = try await api.send("POST", "/api/v1/locks/\(id)/broker-password")
            } catch let error as CLIError where error.answerMissing {
                throw error.missingAnswer(noAnswer: l("error.broker_password_no_answer", id), hint: l("hint.broker_password_no_answer", id), l)
            }
            try context.output(reset) {
                Locks.credentials(reset, done: l("locks.broker_password_reset", id), next: l("locks.broker_password_next_step"), l)
            }
        }
    }

    struct Retire: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(abstract: L.current("help.locks.retire.abstract"), discussion: L.current("help.locks.retire.discussion"))
        }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.locks.id"), valueName: "lock")) var lock: String
        @Flag(help: ArgumentHelp(L.current("help.option.yes"))) var yes = false

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, _) = try context.signedIn()
            let id = try Lookup(api: api).lockID(lock)
            try confirmOrRefuse(yes: yes, question: l("locks.confirm_retire", id), l)
            let retired: LockModel = try await api.send("POST", "/api/v1/locks/\(id)/retire")
            try context.output(retired) { l("locks.retired", retired.id) }
        }
    }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
