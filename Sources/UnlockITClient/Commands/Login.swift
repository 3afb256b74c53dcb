import ArgumentParser
import Foundation
import UnlockITCore
import UnlockITLocalization

struct Login: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(abstract: L.current("help.login.abstract"), discussion: L.current("help.login.discussion"))
    }

    @OptionGroup var global: GlobalOptions

    @Option(help: ArgumentHelp(L.current("help.login.email"), valueName: "email"))
    var email: String?

    @Flag(help: ArgumentHelp(L.current("help.option.password_stdin")))
    var passwordStdin = false

    @Option(help: ArgumentHelp(L.current("help.login.id_token"), valueName: "jwt"))
    var idToken: String?

    @Option(help: ArgumentHelp(L.current("help.login.client_id"), valueName: "id"))
    var clientID: String?

    func validate() throws {
        if idToken != nil && clientID == nil { throw ValidationError(L.current("error.client_id_required")) }
    }

    func run() async throws {
        let context = CommandContext(global)
        let l = context.l
        let stored = try Credentials.load(l)
        let server = try context.serverURL(stored: stored)
        let api = ServerAPI(baseURL: server, token: nil, l: l)
        let secrets = SecretReader(fromStdin: passwordStdin, l: l)

        var password: String?
        let signedIn: SignedInModel
        if let idToken, let clientID {
            // "-": the token from standard input, where `ps` and the shell's history do not see it.
            var token = idToken
            if idToken == "-" {
                // A bearer credential until it expires: not echoed, like a password.
                let line = Terminal.stdinIsTerminal ? Terminal.askSecret(l("prompt.id_token")) : Terminal.readLine()
                token = try line.orThrow(CLIError.usage(l("error.stdin_no_token"), l)).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            signedIn = try await api.send("POST", "/api/v1/auth/oidc", ["clientID": clientID, "idToken": token])
        } else {
            // Asked on a terminal only: standard input otherwise carries the passwords, and its first
            // line taken for the email would send the password as one.
            guard self.email != nil || Terminal.stdinIsTerminal else {
                throw CLIError(l("error.no_email"), hint: l("hint.login_email"), status: .usage)
            }
            let email = try self.email ?? Terminal.ask(l("prompt.email")).orThrow(CLIError.usage(l("error.no_email"), l))
            password = try secrets.read(l("prompt.password"))
            signedIn = try await api.send("POST", "/api/v1/auth/sign-in", ["email": email, "password": password!])
        }

        if signedIn.mustChangePassword {
            Terminal.error(l("login.must_change"))
            let current = try password ?? secrets.read(l("prompt.current_password"))
            let new = try secrets.readNew(l, context: [signedIn.user.email, signedIn.user.name])
            let authorized = ServerAPI(baseURL: server, token: signedIn.token, l: l)
            try await authorized.perform("POST", "/api/v1/me/password", ["currentPassword": current, "newPassword": new])
        }

        let credentials = Credentials(
            server: server, token: signedIn.token, expiresAt: signedIn.expiresAt, email: signedIn.user.email, role: signedIn.user.role.rawValue)
        try credentials.save(l)
        // The session this one replaces is forgotten here, so it is ended on its server too, not left
        // valid until it expires. The new one is saved first: a sign-in that fails keeps the old one.
        var previousEnded: Bool?
        if let stored, stored.token != credentials.token, stored.expiresAt > Date() {
            let why: String? =
                switch await SignOutAnswer.signOut(stored, l) {
                case .ended: nil
                case .unreachable: l("hint.server_unreachable")
                case .failed(let error): error.message
                }
            previousEnded = why == nil
            if let why {
                Terminal.error(l("login.previous_not_ended", stored.email, stored.server, context.date(stored.expiresAt)))
                Terminal.error(why)
            }
        }
        struct Output: Encodable {
            var email: String
            var role: String
            var server: String
            var expiresAt: Date
            /// Whether the session this sign-in replaced was ended on its server; absent without one.
            var previousSessionEnded: Bool?
        }
        let output = Output(
            email: credentials.email, role: credentials.role, server: server, expiresAt: credentials.expiresAt, previousSessionEnded: previousEnded)
        try context.output(output) {
            l("login.done", credentials.email, l("role.\(credentials.role)"), context.date(credentials.expiresAt))
        }
    }
}

/// Passwords from the terminal without echo, or from stdin (one per line) for scripts. On a
/// terminal, `--password-stdin` reads as without it: with a prompt and without echo.
struct SecretReader {
    let fromStdin: Bool
    let l: Localizer

    func read(_ prompt: String) throws -> String {
        if fromStdin && !Terminal.stdinIsTerminal {
            guard let line = Terminal.readLine() else { throw CLIError.usage(l("error.stdin_ended"), l) }
            return line
        }
        guard Terminal.stdinIsTerminal else { throw CLIError.usage(l("error.no_terminal"), l) }
        guard let secret = Terminal.askSecret(prompt) else { throw CLIError.usage(l("error.stdin_ended"), l) }
        return secret
    }

    /// A new password: checked against the policy (`context`: the user's email and name, when known),
    /// and typed twice on a terminal.
    func readNew(_ l: Localizer, context: [String]) throws -> String {
        let new = try read(l("prompt.new_password"))
        guard Validation.password(new, context: context) else {
            throw CLIError(l("error.weak_password"), hint: l("hint.weak_password"), status: .failure)
        }
        if Terminal.stdinIsTerminal {
            guard try read(l("prompt.repeat_password")) == new else { throw CLIError(l("error.passwords_differ"), status: .failure) }
        }
        return new
    }
}

extension Optional {
    func orThrow(_ error: @autoclosure () -> CLIError) throws -> Wrapped {
        guard let value = self else { throw error() }
        return value
    }
}
