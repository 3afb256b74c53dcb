import Foundation
import LockProtocol
import Logging
import MQTT
import UnlockITCore

/// Thousands of simulated locks in one process, for load tests and the benchmark.
///
/// Each lock is a full ``LockRuntime`` with its own MQTT connection and account, but the
/// connections share a few ``MQTTEventLoop`` threads instead of a thread each.
///
/// On disk, a fleet directory holds `flash/<lock id>.json` per lock and `labels.tsv`
/// (`lock id ⇥ setup code`, what the labels would say).
public final class LockFleet: Sendable {
    public let runtimes: [LockRuntime]
    private let loops: [MQTTEventLoop]
    /// Each lock's flash is claimed as a single lock's is (``FlashClaim``), for as long as the fleet
    /// lives: `unlockit-lock reset` or a second fleet on the same directory would otherwise rewrite
    /// the flash of a lock this fleet runs, which would go on with the old key.
    private let claims: [FlashClaim]

    public static func flashPath(directory: String, lock: LockID) -> String { "\(directory)/flash/\(lock.rawValue).json" }
    public static func labelsPath(directory: String) -> String { "\(directory)/labels.tsv" }

    /// First boot of `count` locks named `prefix-000001`…; writes their flash and the labels file.
    /// Both hold secrets (device keys, setup codes), so only the owner may read them, as a lock's
    /// own flash file is.
    public static func create(directory: String, count: Int, prefix: String) throws -> [(LockID, SetupCode)] {
        for folder in [directory, "\(directory)/flash"] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let locks = try (1...count).map { index in
            guard let lock = LockID("\(prefix)-\(String(format: "%06d", index))") else { throw FleetError.invalidPrefix(prefix) }
            return lock
        }
        // A second first boot would give every lock a new device key and setup code, and an
        // activated lock would then refuse every unlock: refused before anything is written.
        if let booted = locks.first(where: { FileManager.default.fileExists(atPath: flashPath(directory: directory, lock: $0)) }) {
            throw FleetError.alreadyBooted(booted, directory: directory)
        }
        var labels: [(LockID, SetupCode)] = []
        var text = ""
        for lock in locks {
            let flash = Flash.firstBoot(lock: lock)
            try FlashFile(path: flashPath(directory: directory, lock: lock), durable: false).save(flash)
            labels.append((lock, flash.setupCode))
            text += "\(lock.rawValue)\t\(flash.setupCode.formatted)\n"
        }
        let path = labelsPath(directory: directory)
        guard OwnerOnlyFile.write(Array(text.utf8), to: path, durable: false) == .written else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        return labels
    }

    /// Reads `lock id ⇥ secret` lines (labels or credentials files). A lock named twice is refused:
    /// two runtimes of one lock would share its flash and push each other off the broker (one client id).
    public static func readPairs(_ path: String) throws -> [(LockID, String)] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var seen = Set<LockID>()
        return try text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, line in
            let fields = line.split(separator: "\t")
            guard !line.isEmpty else { return nil }
            // Named by its number only: the line holds a broker password or a setup code.
            guard fields.count == 2, let lock = LockID(String(fields[0])) else { throw FleetError.badLine(path: path, number: index + 1) }
            guard seen.insert(lock).inserted else { throw FleetError.namedTwice(lock) }
            return (lock, String(fields[1]))
        }
    }

    public enum FleetError: Error, CustomStringConvertible {
        case invalidPrefix(String)
        case badLine(path: String, number: Int)
        case alreadyBooted(LockID, directory: String)
        case namedTwice(LockID)

        public var description: String {
            switch self {
            case .invalidPrefix(let prefix): "\"\(prefix)\" does not make valid lock ids (lowercase letters, digits and hyphens)"
            case .badLine(let path, let number): "\(path), line \(number): not a \"lock id<TAB>secret\" line"
            case .alreadyBooted(let lock, let directory):
                "\(directory) already holds \(lock)'s flash: a second first boot would give its locks new keys; "
                    + "use another --dir, or remove \(directory)/flash to start over"
            case .namedTwice(let lock): "\(lock) is named twice: each lock runs once"
            }
        }
    }

    /// Loads the locks named in `credentials` from `directory` and prepares their connections.
    public init(
        directory: String, credentials: [(LockID, String)], host: String, port: Int, tls: MQTTTLS? = nil, settings: LockSettings,
        loopCount: Int = 2, logger: Logger = Logger(label: "unlockit.fleet")
    ) throws {
        let loops = (0..<max(1, loopCount)).map { MQTTEventLoop(name: "fleet-\($0)", logger: logger) }
        var runtimes: [LockRuntime] = []
        var claims: [FlashClaim] = []
        runtimes.reserveCapacity(credentials.count)
        claims.reserveCapacity(credentials.count)
        for (index, (lock, password)) in credentials.enumerated() {
            let path = Self.flashPath(directory: directory, lock: lock)
            claims.append(try FlashClaim(flashPath: path))
            let file = FlashFile(path: path, durable: false)
            let device = LockDevice(flash: try file.load(), settings: settings)
            runtimes.append(
                try LockRuntime(
                    device: device, flashFile: file, broker: BrokerEndpoint(host: host, port: port, password: password, tls: tls),
                    loop: loops[index % loops.count], keepAlive: 30, logger: logger))
        }
        self.runtimes = runtimes
        self.loops = loops
        self.claims = claims
    }

    /// Connects the fleet in batches, so the broker's listen backlog is never flooded.
    public func start(batchSize: Int = 250) async {
        for start in stride(from: 0, to: runtimes.count, by: batchSize) {
            let batch = runtimes[start..<min(start + batchSize, runtimes.count)]
            for runtime in batch { runtime.start() }
            let deadline = ContinuousClock.now + .seconds(5)
            while batch.contains(where: { !$0.isConnected }) && ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    public func enterPairingMode() { for runtime in runtimes { runtime.enterPairingMode() } }

    /// The fleet's counters, summed, with how many locks are connected and activated.
    public struct Stats: Codable, Sendable {
        public var locks: Int
        public var connected: Int
        public var activated: Int
        public var counters: LockCounters
    }

    public var stats: Stats {
        var stats = Stats(locks: runtimes.count, connected: 0, activated: 0, counters: LockCounters())
        for runtime in runtimes {
            if runtime.isConnected { stats.connected += 1 }
            if runtime.isActivated { stats.activated += 1 }
            stats.counters = stats.counters + runtime.counters
        }
        return stats
    }

    /// How many of the locks not connected failed to reach the broker, by why (a certificate
    /// refused, a connection refused); those still trying their first attempt are not counted.
    public var unreachable: [String: Int] {
        var reasons: [String: Int] = [:]
        for runtime in runtimes where !runtime.isConnected {
            if let reason = runtime.connectionFailure { reasons[reason, default: 0] += 1 }
        }
        return reasons
    }

    public func shutdown() async {
        await withTaskGroup(of: Void.self) { group in
            for runtime in runtimes { group.addTask { await runtime.shutdown() } }
        }
        for loop in loops { await loop.shutdown() }
    }
}
