import ArgumentParser
import Foundation
import UnlockITCore
import UnlockITLocalization

struct Logout: AsyncParsableCommand {
    static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.logout.abstract")) }

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let context = CommandContext(global)
        let l = context.l
        /// What `--json` prints instead of the sentence.
        struct Outcome: Encodable {
            var signedOut: Bool
            var email: String?
            /// Whether the server ended the session; absent without one. False when it could not be
            /// reached: the session then stays valid on it until `validUntil`.
            var revoked: Bool?
            var validUntil: Date?
        }
        guard let credentials = try Credentials.load(l) else {
            try context.output(Outcome(signedOut: false, email: nil)) { l("logout.not_signed_in") }
            return
        }
        // Revoke on the server that issued the session, whatever --server says; forget locally in any
        // case. A server that cannot be reached leaves the session valid until it expires: say so.
        let answer = await SignOutAnswer.signOut(credentials, l)
        // A file left behind would still sign this user in (or at least say so): not a sign-out.
        try Credentials.remove(l)
        let failure: CLIError
        switch answer {
        case .ended:
            try context.output(Outcome(signedOut: true, email: credentials.email, revoked: true)) { l("logout.done", credentials.email) }
            return
        case .unreachable:
            failure = CLIError(
                l("logout.not_revoked", credentials.email, context.date(credentials.expiresAt)), hint: l("hint.server_unreachable"),
                status: .serverUnreachable)
        case .failed(let error):
            failure = CLIError(
                l("logout.not_ended", credentials.email, context.date(credentials.expiresAt)), hint: error.message, status: error.status)
        }
        // Forgotten here, not ended there: scripts get that in JSON too, besides the exit status.
        if context.json {
            try context.printJSON(Outcome(signedOut: true, email: credentials.email, revoked: false, validUntil: credentials.expiresAt))
        }
        throw failure
    }
}

/// What the server's answer to a sign-out says of the session.
enum SignOutAnswer: Equatable {
    /// Ended now, or already (the server itself no longer knows the token: 401 `unauthenticated`).
    case ended
    /// The server could not be reached; the session stays valid on it until it expires.
    case unreachable
    /// The server answered with an error of its own (busy, or failing): the session may still be valid.
    case failed(CLIError)

    /// Asks the server that issued `credentials` to end their session.
    static func signOut(_ credentials: Credentials, _ l: Localizer) async -> SignOutAnswer {
        let api = ServerAPI(baseURL: credentials.server, token: credentials.token, l: l)
        do {
            try await api.perform("POST", "/api/v1/auth/sign-out")
            return .ended
        } catch {
            // `perform` turns every failure into a CLIError; anything else is an answer not understood.
            return SignOutAnswer(error as? CLIError ?? CLIError(l("error.bad_response"), hint: l("hint.bad_response")))
        }
    }

    init(_ error: CLIError) {
        // A 401 that is not the server's own problem (a proxy's, a single sign-on gateway's) says
        // nothing of the session: the token never reached the server.
        if error.problemCode == ProblemCode.unauthenticated.rawValue {
            self = .ended
        } else if error.status == .serverUnreachable {
            self = .unreachable
        } else {
            self = .failed(error)
        }
    }

    static func == (a: Self, b: Self) -> Bool {
        switch (a, b) {
        case (.ended, .ended), (.unreachable, .unreachable): true
        case (.failed(let x), .failed(let y)): x.status == y.status && x.message == y.message
        default: false
        }
    }
}

struct Whoami: AsyncParsableCommand {
    static var configuration: CommandConfiguration { CommandConfiguration(abstract: L.current("help.whoami.abstract")) }

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let context = CommandContext(global)
        let l = context.l
        let (api, credentials) = try context.signedIn()
        let me: MeModel = try await api.get("/api/v1/me")
        try context.output(me) {
            var table = Table([l("column.field"), l("column.value")])
            table.add([l("column.email"), me.user.email])
            table.add([l("column.name"), me.user.name])
            table.add([l("column.role"), l("role.\(me.user.role.rawValue)")])
            table.add([l("column.level"), l.number(me.user.securityLevel)])
            table.add([l("column.company"), me.company.name])
            table.add([l("column.server"), api.baseURL])
            table.add([l("column.session_until"), context.date(credentials.expiresAt)])
            return table.rendered
        }
    }
}

struct Passwd: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(abstract: L.current("help.passwd.abstract"), discussion: L.current("help.passwd.discussion"))
    }

    @OptionGroup var global: GlobalOptions

    @Flag(help: ArgumentHelp(L.current("help.option.password_stdin")))
    var passwordStdin = false

    func run() async throws {
        let context = CommandContext(global)
        let l = context.l
        let (api, credentials) = try context.signedIn()
        let secrets = SecretReader(fromStdin: passwordStdin, l: l)
        let current = try secrets.read(l("prompt.current_password"))
        // The server checks the name too, which the stored session does not hold.
        let new = try secrets.readNew(l, context: [credentials.email])
        try await api.perform("POST", "/api/v1/me/password", ["currentPassword": current, "newPassword": new])
        struct Outcome: Encodable { var passwordChanged = true }
        try context.output(Outcome()) { l("passwd.done") }
    }
}
