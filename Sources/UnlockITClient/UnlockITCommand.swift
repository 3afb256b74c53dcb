import ArgumentParser
import Foundation
import UnlockITCore
import UnlockITLocalization

/// `unlockit`: the admin and employee client of UnlockIT.
public struct UnlockITCommand: AsyncParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "unlockit",
            abstract: L.current("help.root.abstract"),
            discussion: L.current("help.root.discussion"),
            version: "1.0.0",
            subcommands: [
                Login.self, Logout.self, Whoami.self, Passwd.self, Users.self, Rooms.self, Locks.self, Unlock.self, Access.self, Audit.self,
            ])
    }

    public init() {}

    /// People write `unlockit --lang da users list`; the parser wants options after the subcommand.
    /// Global options given before the first subcommand are moved to the end.
    static func hoistingGlobalOptions(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var rest = arguments[...]
        while let first = rest.first, first.hasPrefix("--") {
            let name = first.split(separator: "=", maxSplits: 1)[0]
            guard ["--lang", "--server", "--json"].contains(name) else { break }
            leading.append(first)
            rest = rest.dropFirst()
            if name != "--json" && !first.contains("="), let value = rest.first {
                leading.append(value)
                rest = rest.dropFirst()
            }
        }
        // Alone (`unlockit --json`) they would hide the root's own help.
        guard !rest.isEmpty else { return arguments }
        return Array(rest) + leading
    }

    /// Parses the command line and runs the command. Every failure ends as one localized sentence,
    /// what to do about it, and a documented exit status.
    public static func runMain() async -> Never {
        let l = L.current
        do {
            var command = try parseAsRoot(hoistingGlobalOptions(Array(CommandLine.arguments.dropFirst())))
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
            // Done, but what it printed did not arrive: that is no success for whoever reads it.
            if Terminal.lostOutput {
                Terminal.error(l("error.prefix", l("error.output_lost")))
                Terminal.error(l("hint.output_lost"))
                Foundation.exit(ExitStatus.failure.rawValue)
            }
            Foundation.exit(ExitStatus.success.rawValue)
        } catch let error as CLIError {
            Terminal.error(l("error.prefix", error.message))
            if let hint = error.hint { Terminal.error(hint) }
            Foundation.exit(error.status.rawValue)
        } catch {
            let code = exitCode(for: error)
            // Help, version and completion scripts are not failures.
            if code == .success { exit(withError: error) }
            // The parser's own message is English only; the sentence around it is the user's language.
            Terminal.error(l("error.prefix", l("error.usage")))
            Terminal.error(message(for: error))
            Terminal.error(l("hint.usage"))
            Foundation.exit(ExitStatus.usage.rawValue)
        }
    }
}
