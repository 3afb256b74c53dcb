import ArgumentParser
import Foundation
import UnlockITCore
import UnlockITLocalization

extension Users {
    /// `users import FILE.csv`: every row is checked before anything is written, and either every
    /// user is created or none is.
    struct Import: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(abstract: L.current("help.users.import.abstract"), discussion: L.current("help.users.import.discussion"))
        }
        @OptionGroup var global: GlobalOptions
        @Argument(help: ArgumentHelp(L.current("help.users.import.file"), valueName: "file.csv")) var file: String
        @Flag(help: ArgumentHelp(L.current("help.users.import.dry_run"))) var dryRun = false

        struct Row: Encodable {
            var email: String
            var name: String
            var role: Role
            var securityLevel: Int
            var password: String?
        }

        /// Why a row was rejected, here or by the server. Said from the catalogs' `import.reason.*`.
        enum RowReason: String, CaseIterable {
            case invalidEmail = "invalid_email"
            case invalidName = "invalid_name"
            case invalidRole = "invalid_role"
            case invalidLevel = "invalid_level"
            case weakPassword = "weak_password"
            case wrongFieldCount = "wrong_field_count"
            case emailTaken = "email_taken"
            case oidcOnlyHasNoPassword = "oidc_only_has_no_password"
            case noOIDCIssuer = "no_oidc_issuer"
        }

        struct Rejection: Encodable, Sendable {
            var line: Int
            var field: String
            var reason: String
        }

        /// An answer to the import that is not the server's own but a proxy's. A gateway error or
        /// timeout from one (its timeout is often shorter than an import's hashing) may come after
        /// the server took the import, so it is said like an answer that could not be read.
        static func notTheServers(_ status: Int, _ l: Localizer) -> CLIError {
            let exit = ServerAPI.exitStatus(UInt(status))
            if [502, 504].contains(status) {
                return CLIError(l("error.import_answer_unreadable"), hint: l("hint.import_answer_unreadable"), status: exit)
            }
            return CLIError(l("error.http_status", status), hint: l("hint.bad_response"), status: exit)
        }

        func run() async throws {
            let context = CommandContext(global)
            let l = context.l
            let (api, _) = try context.signedIn()
            guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
                throw CLIError(l("error.unreadable_file", file), status: .failure)
            }
            let (rows, lines, rejections) = try Self.parse(text, l)
            guard rejections.isEmpty else { throw Self.rejected(rejections, context) }

            if !context.json { Terminal.error(l.plural("import.sending", count: rows.count)) }
            struct Body: Encodable { var users: [Row] }
            let imported: ImportedModel
            do {
                let response = try await api.call(
                    "POST", "/api/v1/users/import\(dryRun ? "?dryRun=true" : "")", body: try ServerAPI.encoder.encode(Body(users: rows)), raw: true,
                    // The server hashes a password per row (a third of a second each at cost 12) before it
                    // answers; giving up earlier would lose the generated passwords of a committed import.
                    timeout: .seconds(120 + rows.count))
                imported = try ServerAPI.decoder.decode(ImportedModel.self, from: response)
            } catch let failure as ServerAPI.Failure {
                guard let problem = failure.problem else { throw Self.notTheServers(failure.status, l) }
                guard let errors = problem.errors, problem.code == ProblemCode.importRejected.rawValue else {
                    throw CLIError.problem(problem.code, reason: nil, detail: problem.detail, l)
                }
                throw try Self.rejected(Self.rejections(errors, lines: lines, l), context)
            } catch let error as CLIError where error.answerLost {
                throw CLIError(l("error.import_no_answer"), hint: l("hint.import_answer_unreadable"), status: error.status)
            } catch is DecodingError {
                // The server took the import but its answer, with any generated passwords, cannot be read.
                throw CLIError(l("error.import_answer_unreadable"), hint: l("hint.import_answer_unreadable"), status: .failure)
            }

            try context.output(imported) {
                let users = imported.created.map(\.user)
                var text = Users.table(users, context) + "\n\n"
                text += dryRun ? l.plural("import.dry_run", count: users.count) : l.plural("import.done", count: users.count)
                let generated = imported.created.filter { $0.initialPassword != nil }
                if !generated.isEmpty {
                    text += "\n" + l("import.initial_passwords")
                    for created in generated { text += "\n  \(created.user.email)  \(created.initialPassword!)" }
                }
                return text
            }
        }

        /// Reads and checks every row. Returns the rows, each row's line number, and the rejections.
        static func parse(_ text: String, _ l: Localizer) throws -> ([Row], [Int], [Rejection]) {
            // A spreadsheet's "CSV UTF-8" starts with a byte-order mark; rows it exports for blank lines
            // are only commas (or spaces): both are noise, not data.
            let records = CSV.rows(text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text).filter { record in
                !record.fields.allSatisfy { $0.trimmingCharacters(in: .whitespaces).isEmpty }
            }
            guard let header = records.first else { throw CLIError(l("error.empty_file"), hint: l("hint.import_format"), status: .failure) }
            let columns = header.fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            for required in ["email", "name", "role", "level"] where !columns.contains(required) {
                throw CLIError(l("error.missing_column", required), hint: l("hint.import_format"), status: .failure)
            }
            if let unknown = columns.first(where: { !["email", "name", "role", "level", "password"].contains($0) }) {
                throw CLIError(l("error.unknown_column", unknown), hint: l("hint.import_format"), status: .failure)
            }
            if let twice = columns.first(where: { column in columns.filter { $0 == column }.count > 1 }) {
                throw CLIError(l("error.duplicate_column", twice), hint: l("hint.import_format"), status: .failure)
            }
            var rows: [Row] = []
            var lines: [Int] = []
            var rejections: [Rejection] = []
            var seen: [String: Int] = [:]
            var progress = Progress(label: l("import.checking"), total: records.count - 1)
            for (index, record) in records.dropFirst().enumerated() {
                defer { progress.update(index + 1) }
                /// The column's field, trimmed unless it is the password, which is taken as written.
                func value(_ column: String) -> String? {
                    guard let position = columns.firstIndex(of: column), position < record.fields.count else { return nil }
                    let field = record.fields[position]
                    let trimmed = field.trimmingCharacters(in: .whitespaces)
                    return trimmed.isEmpty ? nil : column == "password" ? field : trimmed
                }
                func reject(_ field: String, _ reason: RowReason) {
                    rejections.append(Rejection(line: record.line, field: field, reason: reason.rawValue))
                }
                guard record.fields.count == columns.count else {
                    reject("", .wrongFieldCount)
                    continue
                }
                guard let email = value("email").flatMap(Validation.email) else {
                    reject("email", .invalidEmail)
                    continue
                }
                guard let name = value("name").flatMap({ Validation.name($0) }) else {
                    reject("name", .invalidName)
                    continue
                }
                guard let role = value("role").flatMap({ Role(rawValue: $0.lowercased()) }) else {
                    reject("role", .invalidRole)
                    continue
                }
                guard let level = value("level").flatMap({ Int($0) }).flatMap(Validation.level) else {
                    reject("level", .invalidLevel)
                    continue
                }
                let password = value("password")
                if let password, !Validation.password(password, context: [email, name]) {
                    reject("password", .weakPassword)
                    continue
                }
                if let first = seen[email] {
                    rejections.append(Rejection(line: record.line, field: "email", reason: "duplicate_in_file(\(first))"))
                    continue
                }
                seen[email] = record.line
                rows.append(Row(email: email, name: name, role: role, securityLevel: level, password: password))
                lines.append(record.line)
            }
            if records.count == 1 { throw CLIError(l("error.empty_file"), hint: l("hint.import_format"), status: .failure) }
            // The server's own limit, said before the file is sent.
            if records.count - 1 > Self.maximumRows {
                throw CLIError(l("error.import_too_many", records.count - 1), hint: l("hint.import_split"), status: .failure)
            }
            return (rows, lines, rejections)
        }

        /// The most users one import takes (the server refuses more).
        static let maximumRows = 10_000

        /// Every rejected row with its line number and reason; nothing was imported.
        static func rejected(_ rejections: [Rejection], _ context: CommandContext) -> CLIError {
            let l = context.l
            if context.json {
                struct Output: Encodable {
                    var imported = 0
                    var rejected: [Rejection]
                }
                try? context.printJSON(Output(rejected: rejections))
            } else {
                for rejection in rejections {
                    Terminal.error(l("import.rejected_row", rejection.line, reasonText(rejection.reason, l)))
                }
            }
            return CLIError(l.plural("import.nothing_imported", count: rejections.count), hint: l("hint.import_fix"), status: .failure)
        }

        /// The server's rejections, by row index, as the file's lines: also the row a
        /// `duplicate_in_file(index)` names. An index the file does not have is an answer that
        /// cannot be read, not a crash.
        static func rejections(_ errors: [ServerAPI.ImportRowError], lines: [Int], _ l: Localizer) throws -> [Rejection] {
            func line(_ index: Int) throws -> Int {
                guard lines.indices.contains(index) else { throw CLIError(l("error.bad_response"), hint: l("hint.bad_response"), status: .failure) }
                return lines[index]
            }
            return try errors.map { error in
                var reason = error.reason
                if let first = duplicateOf(reason) { reason = "duplicate_in_file(\(try line(first)))" }
                // The file's column, as the rejections found here name it.
                let field = error.field == "securityLevel" ? "level" : error.field
                return Rejection(line: try line(error.index), field: field, reason: reason)
            }
        }

        /// The row or line a `duplicate_in_file(n)` reason names; nil for any other reason.
        static func duplicateOf(_ reason: String) -> Int? {
            guard reason.hasPrefix("duplicate_in_file("), reason.hasSuffix(")") else { return nil }
            return Int(reason.dropFirst("duplicate_in_file(".count).dropLast())
        }

        /// `duplicate_in_file(12)` is said with its line number; the rest from the catalog.
        static func reasonText(_ reason: String, _ l: Localizer) -> String {
            if let number = duplicateOf(reason) { return l("import.reason.duplicate", number) }
            return l.has("import.reason.\(reason)") ? l("import.reason.\(reason)") : reason
        }
    }
}
