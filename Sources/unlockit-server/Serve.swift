import ArgumentParser
import Foundation
import Hummingbird
import Logging
import MQTT
import UnlockITServer
import UnlockITStore

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the server until SIGINT or SIGTERM.")

    @OptionGroup var settings: ConfigOptions

    @Option(help: "Write the API's port the server bound (useful with UNLOCKIT_HTTP_PORT=0) to this file.")
    var portFile: String?

    @Option(help: "Write the operations listener's port (/healthz, /metrics) to this file (useful with UNLOCKIT_OPERATIONS_PORT=0).")
    var operationsPortFile: String?

    func run() async throws {
        let configuration = try settings.load()
        let logger = makeLogger(level: configuration.logLevel)
        for warning in configuration.plainNetworkWarnings { logger.warning("\(warning)") }
        // Each HTTP connection holds a descriptor: the usual soft limit of 1,024 would let a few
        // clients (up to httpConnectionsPerClient each) take them all.
        FileDescriptorLimit.raise(to: 65_536)
        let started = ContinuousClock.now
        let store = try SQLiteStore(
            path: configuration.databasePath,
            onAuditFailure: { error in logger.error("could not write audit events; retrying", metadata: ["error": "\(error)"]) })
        let masterKey = try await MasterKeyCheck.load(configuration: configuration, store: store, logger: logger)
        let portFiles: [UnlockITApp.Listener: String] = [.api: portFile, .operations: operationsPortFile].compactMapValues { $0 }
        let parts = UnlockITApp.Parts(configuration: configuration, store: store, masterKey: masterKey, logger: logger)
        let app = try UnlockITApp.build(
            parts,
            onListening: { listener, port in
                let host = listener == .api ? configuration.httpHost : configuration.operationsHost
                let url = host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
                logger.notice(
                    "unlockit-server listening",
                    metadata: [
                        "listener": "\(listener.rawValue)", "url": "\(url)", "startup": "\(started.duration(to: .now))",
                    ])
                if let file = portFiles[listener] { try? "\(port)\n".write(toFile: file, atomically: true, encoding: .utf8) }
            })
        do {
            try await UnlockITApp.run(app, parts)
        } catch {
            await Self.writeQueuedAudit(store, logger)
            throw error
        }
        await Self.writeQueuedAudit(store, logger)
    }

    /// Unlock audit events are queued, not awaited: the last ones are written before the process ends.
    static func writeQueuedAudit(_ store: SQLiteStore, _ logger: Logger) async {
        await FinalAuditFlush.run(logger: logger) { try await store.flushAudit() }
    }
}
