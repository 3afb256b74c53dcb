import ArgumentParser
import Foundation
import Logging
import UnlockITServer

@main
struct UnlockITServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlockit-server",
        abstract: "The UnlockIT broker server: companies, users, rooms and locks, and the lock protocol over MQTT.",
        discussion: """
            Settings come from an optional JSON file (--config) and UNLOCKIT_* environment variables; \
            see docs/operations.md.
            """,
        subcommands: [Serve.self, Bootstrap.self, BrokerSetupCommand.self, ReleaseLockCommand.self])
}

/// `--config`, shared by the commands that read the server's settings.
struct ConfigOptions: ParsableArguments {
    @Option(help: "A JSON settings file (environment variables override it).")
    var config: String?

    func load() throws -> ServerConfiguration {
        do {
            return try ServerConfiguration.load(
                file: config ?? ProcessInfo.processInfo.environment["UNLOCKIT_CONFIG"], environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError("\(error)")
        }
    }
}

func makeLogger(level: String) -> Logger {
    LoggingSystem.bootstrap(LazyMetadataLogHandler.standardError)
    var logger = Logger(label: "unlockit.server")
    logger.logLevel = Logger.Level(rawValue: level) ?? .info
    return logger
}
