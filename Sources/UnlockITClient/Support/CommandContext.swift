import Foundation
import Posix
import UnlockITCore
import UnlockITLocalization

/// What a command works with: the language, how to print, the server and the session.
struct CommandContext: Sendable {
    let l: Localizer
    let json: Bool
    let serverOption: String?
    let environment: [String: String]

    init(_ options: GlobalOptions, environment: [String: String] = ProcessInfo.processInfo.environment) {
        l = options.lang.flatMap(Language.init(code:)).map(Localizer.init) ?? L.current
        json = options.json
        serverOption = options.server
        self.environment = environment
    }

    /// `--server`, then `UNLOCKIT_SERVER`, then the stored session's server.
    func serverURL(stored: Credentials?) throws -> String {
        guard let url = serverOption ?? environment["UNLOCKIT_SERVER"] ?? stored?.server else {
            throw CLIError(l("error.no_server"), hint: l("hint.no_server"), status: .usage)
        }
        return try normalized(url)
    }

    /// The URL without trailing slashes. Plain `http` only to this machine: elsewhere it would carry
    /// passwords and tokens in the clear.
    private func normalized(_ url: String) throws -> String {
        var trimmed = url
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let parsed = URL(string: trimmed), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = parsed.host
        else {
            throw CLIError(l("error.bad_server_url", url), hint: l("hint.no_server"), status: .usage)
        }
        // A user name or password in it would be stored and shown with the address (whoami, errors).
        guard parsed.user == nil && parsed.password == nil else {
            throw CLIError(l("error.server_url_credentials"), hint: l("hint.server_url_credentials"), status: .usage)
        }
        guard scheme == "https" || HostAddress.isLoopback(host) else {
            throw CLIError(l("error.insecure_server", url), hint: l("hint.insecure_server"), status: .usage)
        }
        return trimmed
    }

    /// The server that issued the stored session. A session's token goes to that server only: when
    /// `--server` or `UNLOCKIT_SERVER` names another, the command is refused before anything is sent.
    func sessionServer(_ credentials: Credentials) throws -> String {
        let issuer = try normalized(credentials.server)
        let asked = try serverURL(stored: credentials)
        guard asked.lowercased() == issuer.lowercased() else {
            throw CLIError(l("error.other_server", issuer, asked), hint: l("hint.other_server", asked), status: .notSignedIn)
        }
        return issuer
    }

    /// The API with the stored session; refuses when there is none, it has expired, or it is another server's.
    func signedIn() throws -> (api: ServerAPI, credentials: Credentials) {
        guard let credentials = try Credentials.load(l) else {
            throw CLIError(l("error.not_signed_in"), hint: l("hint.log_in_again"), status: .notSignedIn)
        }
        guard credentials.expiresAt > Date() else {
            throw CLIError(l("error.unauthenticated"), hint: l("hint.unauthenticated"), status: .notSignedIn)
        }
        return (ServerAPI(baseURL: try sessionServer(credentials), token: credentials.token, l: l), credentials)
    }

    /// Prints `value` as JSON (sorted keys, ISO 8601 dates) for scripts.
    func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        Terminal.line(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// Prints a table for people, or `value` as JSON with `--json`.
    func output(_ value: some Encodable, table: () -> String) throws {
        if json { try printJSON(value) } else { Terminal.line(table()) }
    }

    func yesNo(_ value: Bool) -> String { value ? l("word.yes") : l("word.no") }
    func date(_ date: Date?) -> String { date.map { l.dateTime($0) } ?? "–" }
}
