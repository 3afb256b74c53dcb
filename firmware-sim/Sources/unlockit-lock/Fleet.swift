import ArgumentParser
import Foundation
import LockFirmware
import LockProtocol
import MQTT
import UnlockITCore

struct Fleet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Many simulated locks in one process, for load tests.",
        subcommands: [Create.self, Start.self])

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init", abstract: "First boot of N locks: writes DIR/flash/ and DIR/labels.tsv (id, setup code).")

        @Option(help: "The fleet directory.") var dir: String
        @Option(help: "How many locks.") var count: Int
        @Option(help: "Device ids are PREFIX-000001, PREFIX-000002, …") var prefix = "fleet"

        func validate() throws {
            guard (1...100_000).contains(count) else { throw ValidationError("--count must be between 1 and 100000.") }
        }

        func run() throws {
            let labels = try LockFleet.create(directory: dir, count: count, prefix: prefix)
            say("created \(labels.count) locks; labels in \(LockFleet.labelsPath(directory: dir))")
        }
    }

    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Run the locks listed in a credentials file (lines: id<TAB>password).",
            discussion: "Commands on stdin: \"stats\" prints a JSON line of counters, \"pair\" puts every lock in pairing mode.")

        @Option(help: "The fleet directory.") var dir: String
        @Option(help: "The broker, as mqtt://host:port, or mqtts://host:port for TLS.") var broker: String
        @Option(help: "For an mqtts:// broker: the PEM file of the authorities its certificate must chain to (else the system's).")
        var caFile: String?
        @Option(help: "The credentials file.") var credentials: String
        @Option(help: "Event loop threads.") var loops = 2
        @Flag(help: "Start every lock in pairing mode.") var pairing = false
        @OptionGroup var behaviour: BehaviourOptions

        func validate() throws {
            // A lock waits for its flash on its MQTT loop, which in a fleet is every lock's on it.
            guard behaviour.flashWriteTime == 0 else {
                throw ValidationError("--flash-write-time is for a single lock: in a fleet, one lock's write would stall every lock on its loop.")
            }
        }

        func run() async throws {
            FileDescriptorLimit.raise()
            let (address, tls) = try parseBroker(broker, caFile: caFile)
            let pairs = try LockFleet.readPairs(credentials)
            // Running out of descriptors half-way would look like a broken broker; say so before starting.
            // Each lock: its connection, and the claim on its flash.
            let capacity = FileDescriptorLimit.clientCapacity(alsoPerClient: 1)
            guard pairs.count <= capacity else {
                throw FleetError(
                    "\(pairs.count) locks need about \(pairs.count * (FileDescriptorLimit.perClient + 1)) file descriptors, but this "
                        + "process may open \(FileDescriptorLimit.current) (ulimit -n); run at most \(capacity) locks per fleet process.")
            }
            let fleet = try LockFleet(
                directory: dir, credentials: pairs, host: address.host, port: address.port, tls: tls, settings: behaviour.settings,
                loopCount: loops)
            if pairing { fleet.enterPairingMode() }
            let signals = await Signals.trap()
            await fleet.start()
            say(statsLine(fleet))
            let commands = StdinCommands { command in
                switch command {
                case "stats": say(statsLine(fleet))
                case "pair": fleet.enterPairingMode()
                default: say("{\"error\":\"unknown command\"}")
                }
            }
            commands.start()
            // As a lone lock does, the fleet says why locks cannot reach the broker: a line
            // {"unreachable":{reason: locks}} whenever that changes, and {"unreachable":{}} once all
            // are in again.
            let failures = Task {
                var said: [String: Int] = [:]
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(2))
                    let now = fleet.unreachable
                    guard now != said else { continue }
                    said = now
                    say(unreachableLine(now))
                }
            }
            await Signals.run(signals, onPairingButton: { fleet.enterPairingMode() })
            failures.cancel()
            await fleet.shutdown()
        }

        private func unreachableLine(_ reasons: [String: Int]) -> String { jsonLine(["unreachable": reasons]) }

        private func statsLine(_ fleet: LockFleet) -> String { jsonLine(fleet.stats) }

        /// One line of the fleet's output: JSON with its keys sorted.
        private func jsonLine(_ value: some Encodable) -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
        }
    }
}

struct FleetError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
