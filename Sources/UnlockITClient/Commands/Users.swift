import ArgumentParser
import Foundation
import UnlockITCore
import UnlockITLocalization

struct Users: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            abstract: L.current("help.users.abstract"), discussion: L.current("help.users.discussion"),
            subcommands: [List.self, Add.self, Show.self, Edit.self, Remove.self, Import.self, ResetPassword.self, UnlinkOIDC.self])
    }

    static func table(_ users: [UserModel], _ context: CommandContext) -> String {
        let l = context.l
        var table = Table([l("column.email"), l("column.name"), l("column.role"), l("column.level"), l("column.enabled")])
        for user in users {
            table.add([user.email, user.name, l("role.\(user.role.rawValue)"), l.number(user.securityLevel), context.yesNo(user.enabled)])
        }
        return table.rendered
    }

    struct List: AsyncParsableCommand {
        static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.users.list.abstract")) }
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let context = CommandContext(global)
            let (api, _) = try context.signedIn()
            let users: ItemsModel<UserModel> = try await api.get("/api/v1/users")
            try context.output(users) {
                (users.items.isEmpty ? "" : Users.table(users.items, context) + "\n\n") + context.l.plural("users.count", count: users.items.count)
            }
        }
    }

    struct Add: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(abstract: L.current("help.users.add.abstract"), discussion: L.current("help.users.add.discussion"))
        }
        @OptionGroup var global: GlobalOptions
        @Option(help: ArgumentHelp(L.current("help.users.email"), valueName: "email")) var email: String
        @Option(help: ArgumentHelp(L.current("help.users.name"), valueName: "name")) var name: String
        @Option(help: ArgumentHelp(L.current("help.users.role"), valueName: "admin|employee")) var role: Role = .employee
        @Option(help: ArgumentHelp(L.current("help.users.level"), valueName: "n")) var level: Int = 0
        @Flag(help: ArgumentHelp(L.current("help.users.password_stdin"))) var passwordStdin = false
        @Flag(help: ArgumentHelp(L.current("help.users.oidc_only"))) var oidcOnly = false

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, _) = try context.signedIn()
            struct Body: Encodable {
                var email: String
                var name: String
                var role: Role
                var securityLevel: Int
                var password: String?
                var oidcOnly: Bool?
            }
            let password = passwordStdin ? try SecretReader(fromStdin: true, l: l).read(l("prompt.new_password")) : nil
            let created: CreatedUserModel
            do {
                created = try await api.send(
                    "POST", "/api/v1/users",
                    Body(email: email, name: name, role: role, securityLevel: level, password: password, oidcOnly: oidcOnly ? true : nil))
            } catch let error as CLIError where error.answerMissing {
                // A password the server chose would be lost with the answer.
                let hint = password == nil && !oidcOnly ? l("hint.user_add_no_answer", email, email) : l("hint.user_add_no_answer_checked", email)
                throw error.missingAnswer(noAnswer: l("error.user_add_no_answer", email), hint: hint, l)
            }
            try context.output(created) {
                var text = l("users.created", created.user.email)
                if let initial = created.initialPassword { text += "\n" + l("users.initial_password", initial) }
                return text
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.users.show.abstract")) }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.users.reference"), valueName: "user")) var user: String

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, _) = try context.signedIn()
            // The user's own answer: it also says which identity providers' accounts they are linked to.
            let found: UserModel = try await api.get("/api/v1/users/\(try await Lookup(api: api).userID(user))")
            try context.output(found) {
                var table = Table([l("column.field"), l("column.value")])
                table.add([l("column.email"), found.email])
                table.add([l("column.name"), found.name])
                table.add([l("column.role"), l("role.\(found.role.rawValue)")])
                table.add([l("column.level"), l.number(found.securityLevel)])
                table.add([l("column.enabled"), context.yesNo(found.enabled)])
                table.add([l("column.must_change_password"), context.yesNo(found.mustChangePassword)])
                let issuers = found.oidcIssuers ?? []
                table.add([l("column.oidc_accounts"), issuers.isEmpty ? "–" : issuers.joined(separator: ", ")])
                table.add([l("column.created"), context.date(found.createdAt)])
                table.add([l("column.id"), found.id])
                return table.rendered
            }
        }
    }

    struct Edit: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(abstract: L.current("help.users.edit.abstract"), discussion: L.current("help.users.edit.discussion"))
        }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.users.reference"), valueName: "user")) var user: String
        @Option(help: ArgumentHelp(L.current("help.users.new_email"), valueName: "email")) var email: String?
        @Option(help: ArgumentHelp(L.current("help.users.name"), valueName: "name")) var name: String?
        @Option(help: ArgumentHelp(L.current("help.users.role"), valueName: "admin|employee")) var role: Role?
        @Option(help: ArgumentHelp(L.current("help.users.level"), valueName: "n")) var level: Int?
        @Flag(help: ArgumentHelp(L.current("help.users.enable"))) var enable = false
        @Flag(help: ArgumentHelp(L.current("help.users.disable"))) var disable = false

        func validate() throws {
            if enable && disable { throw ValidationError(L.current("error.enable_and_disable")) }
            if email == nil && name == nil && role == nil && level == nil && !enable && !disable {
                throw ValidationError(L.current("error.nothing_to_change"))
            }
        }

        func run() async throws {
            let context = CommandContext(global)
            let (api, _) = try context.signedIn()
            let found = try await Lookup(api: api).user(user)
            struct Body: Encodable {
                var email: String?
                var name: String?
                var role: Role?
                var securityLevel: Int?
                var enabled: Bool?
            }
            let updated: UserModel = try await api.send(
                "PATCH", "/api/v1/users/\(found.id)",
                Body(email: email, name: name, role: role, securityLevel: level, enabled: enable ? true : (disable ? false : nil)))
            try context.output(updated) { context.l("users.updated", updated.email) }
        }
    }

    struct Remove: AsyncParsableCommand {
        static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.users.remove.abstract")) }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.users.reference"), valueName: "user")) var user: String
        @Flag(help: ArgumentHelp(L.current("help.option.yes"))) var yes = false

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, found) = try await Users.confirmed(user, yes: yes, context) { l("users.confirm_remove", $0) }
            try await api.perform("DELETE", "/api/v1/users/\(found.id)")
            try context.output(found) { l("users.removed", found.email) }
        }
    }

    struct ResetPassword: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(commandName: "reset-password", abstract: L.current("help.users.reset.abstract"))
        }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.users.reference"), valueName: "user")) var user: String
        @Flag(help: ArgumentHelp(L.current("help.users.password_stdin"))) var passwordStdin = false
        @Flag(help: ArgumentHelp(L.current("help.option.yes"))) var yes = false

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            // The user's password stops working at once and every session of theirs ends: not undone.
            let (api, found) = try await Users.confirmed(user, yes: yes, context) { l("users.confirm_reset_password", $0) }
            let password = passwordStdin ? try SecretReader(fromStdin: true, l: l).read(l("prompt.new_password")) : nil
            // No password is an empty object (the server then chooses one); the API refuses `null`.
            let body: [String: String] = password.map { ["password": $0] } ?? [:]
            let reset: PasswordResetModel
            do {
                reset = try await api.send("POST", "/api/v1/users/\(found.id)/password", body)
            } catch let error as CLIError where error.answerMissing {
                throw error.missingAnswer(
                    noAnswer: l("error.password_reset_no_answer", found.email), hint: l("hint.password_reset_no_answer", found.email), l)
            } catch let error as CLIError where error.problemCode == ProblemCode.noPassword.rawValue {
                // The code's own message speaks to the account's user (`passwd`); this one to the admin.
                var refusal = CLIError(
                    l("error.reset_no_password", found.email), hint: l("hint.reset_no_password", found.email), status: error.status)
                refusal.problemCode = error.problemCode
                throw refusal
            }
            try context.output(reset) {
                l("users.password_reset", found.email) + (reset.initialPassword.map { "\n" + l("users.initial_password", $0) } ?? "")
            }
        }
    }
}

extension Users {
    /// For a command that changes one user for good: the signed-in API and the user `reference`
    /// names, once the change is confirmed (`question`, given the user's email; see
    /// ``confirmOrRefuse(yes:question:_:)``).
    static func confirmed(
        _ reference: String, yes: Bool, _ context: CommandContext, question: (String) -> String
    ) async throws -> (api: ServerAPI, user: UserModel) {
        let (api, _) = try context.signedIn()
        let found = try await Lookup(api: api).user(reference)
        try confirmOrRefuse(yes: yes, question: question(found.email), context.l)
        return (api, found)
    }

    /// For a user whose account at the identity provider was made again: until they are unlinked,
    /// the new account's sign-ins are refused (`identity_mismatch`).
    struct UnlinkOIDC: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(commandName: "unlink-oidc", abstract: L.current("help.users.unlink.abstract"))
        }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.users.reference"), valueName: "user")) var user: String
        @Flag(help: ArgumentHelp(L.current("help.option.yes"))) var yes = false

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            // Whoever's account the next sign-in is made with is linked: the admin vouches for it.
            let (api, found) = try await Users.confirmed(user, yes: yes, context) { l("users.confirm_unlink", $0) }
            let answer: UnlinkedModel = try await api.send("DELETE", "/api/v1/users/\(found.id)/identities")
            try context.output(answer) { answer.unlinked > 0 ? l("users.unlinked", found.email) : l("users.not_linked", found.email) }
        }
    }
}

extension Role: ExpressibleByArgument {}

/// Destructive commands ask on a terminal and need `--yes` otherwise.
func confirmOrRefuse(yes: Bool, question: String, _ l: Localizer) throws {
    if yes { return }
    guard Terminal.stdinIsTerminal else { throw CLIError.usage(l("error.confirmation_needed"), l) }
    guard Terminal.confirm(question, l) else { throw CLIError(l("error.cancelled"), status: .failure) }
}
