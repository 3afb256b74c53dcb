import Foundation
import MQTT
import SiteHarness
import Synchronization

/// Everything the benchmark runs against, on one host: mosquitto, the server on a fresh SQLite
/// file, and a fleet of simulated locks in one process (or as few as the file-descriptor limit
/// allows), with a company, users, rooms and locks.
final class BenchSite: Sendable {
    let directory: String
    let broker: TestBroker
    let server: TestServer
    /// The fleet processes: one, unless the descriptor limit makes it several.
    let fleets: [ChildProcess]
    let admin: String
    /// Employees with enough level for every room.
    let employees: [String]
    /// Users for the sign-in load, with their passwords.
    let signInUsers: [(email: String, password: String)]
    let locks: [String]
    let startupSeconds: Double
    let registrationSeconds: Double
    let activationSeconds: Double

    /// - Parameter lockTLS: the locks reach the broker's TLS listener (an authority and certificate
    ///   of the run's own), the server its loopback one.
    static func start(
        locks count: Int, employees employeeCount: Int, signInUsers signInCount: Int, directory: String, openTime: Double, lockTLS: Bool
    ) async throws -> BenchSite {
        FileDescriptorLimit.raise()
        // mosquitto inherits this limit and holds one descriptor per lock.
        guard count + 512 <= FileDescriptorLimit.current else {
            throw HarnessError("\(count) locks need the broker to hold \(count) connections, but ulimit -n is \(FileDescriptorLimit.current)")
        }
        let certificates = lockTLS ? try await TestCertificates.make(in: "\(directory)/pki") : nil
        let broker = try await TestBroker.start(in: directory, certificates: certificates)
        let lockBroker = certificates.map { ["--broker", broker.tlsURL!, "--ca-file", $0.authorityFile] } ?? ["--broker", broker.url]
        try await broker.addSuperuser(username: "bench", password: "bench floor password")

        say("starting the server")
        let startedAt = ContinuousClock.now
        let server = try await TestServer.start(
            broker: broker, directory: directory,
            extra: [
                "UNLOCKIT_LOG_LEVEL": "warning", "UNLOCKIT_TOKEN_LIFETIME": "86400",
                // One host plays every user's client: the per-client limit would only measure itself.
                "UNLOCKIT_SIGN_INS_PER_CLIENT_PER_MINUTE": "1000000",
                // A few users stand in for the thousands whose unlocks make up the load.
                "UNLOCKIT_UNLOCKS_PER_USER_PER_MINUTE": "1000000",
                // And a few locks for every door: 8,000 unlocks/s over 1,000 locks is ≈ 2,000 messages
                // a minute from each, over the default budget; fewer locks send more.
                "UNLOCKIT_LOCK_MESSAGES_PER_MINUTE": "10000000",
            ])
        let startupSeconds = startedAt.duration(to: .now).seconds
        let client = server.api

        say("creating the company, users and rooms")
        let admin = try await server.adminSession(company: "Bench", email: "admin@bench.test")
        var rooms: [String] = []
        for index in 0..<10 {
            let reply = try await client.post(
                "/api/v1/rooms", token: admin, ["name": "Room \(index)", "type": "office", "requiredLevel": 1])
            guard reply.status == 201, let id = reply.json["id"] as? String else { throw HarnessError("room: \(reply.status)") }
            rooms.append(id)
        }
        var employees: [String] = []
        var signInUsers: [(String, String)] = []
        for index in 0..<(employeeCount + signInCount) {
            let email = "user\(index)@bench.test"
            let reply = try await client.post(
                "/api/v1/users", token: admin,
                ["email": email, "name": "User \(index)", "role": "employee", "securityLevel": 5, "password": "initial password 1"])
            guard reply.status == 201 else { throw HarnessError("user: \(reply.status)") }
            let token = try await server.api.signIn(email: email, password: "initial password 1", newPassword: "bench password \(index)")
            if index < employeeCount { employees.append(token) } else { signInUsers.append((email, "bench password \(index)")) }
        }

        say("first boot of \(count) locks")
        let fleetDirectory = "\(directory)/fleet"
        let initFleet = try ChildProcess(
            try Binaries.path("unlockit-lock"), ["fleet", "init", "--dir", fleetDirectory, "--count", "\(count)", "--prefix", "bench"],
            name: "fleet-init")
        guard try await initFleet.waitForExit(timeout: .seconds(600)) == 0 else { throw HarnessError("fleet init: \(initFleet.output)") }
        let labels = try String(contentsOfFile: "\(fleetDirectory)/labels.tsv", encoding: .utf8).split(separator: "\n").map {
            let fields = $0.split(separator: "\t")
            return (id: String(fields[0]), code: String(fields[1]))
        }

        let roomIDs = rooms
        let registeredAt = ContinuousClock.now
        let credentials = Mutex<[String: String]>([:])
        var progress = ProgressBar("registering locks", total: labels.count)
        try await forEach(labels, concurrency: 8, progress: &progress) { label, index in
            let reply = try await client.post(
                "/api/v1/locks", token: admin, ["id": label.id, "name": "Door \(index)", "roomId": roomIDs[index % roomIDs.count]])
            guard reply.status == 201, let mqtt = reply.json["mqtt"] as? [String: any Sendable], let password = mqtt["password"] as? String else {
                throw HarnessError("register \(label.id): \(reply.status) \(reply.text)")
            }
            credentials.withLock { $0[label.id] = password }
        }
        let registrationSeconds = registeredAt.duration(to: .now).seconds
        // A lock holds its connection's descriptor (three where libmosquitto's socket pair stays: see
        // `FileDescriptorLimit.perClient`) and its flash's claim, as `fleet run` counts them; where the
        // limit is lower than a whole fleet needs, the fleet is split over several processes.
        let perFleet = max(1, FileDescriptorLimit.clientCapacity(alsoPerClient: 1))
        let lines = credentials.withLock { $0 }.sorted { $0.key < $1.key }.map { "\($0.key)\t\($0.value)\n" }
        let shards = stride(from: 0, to: lines.count, by: perFleet).map { lines[$0..<min($0 + perFleet, lines.count)] }
        say(
            shards.count == 1
                ? "connecting the fleet" : "connecting the fleet in \(shards.count) processes (ulimit -n \(FileDescriptorLimit.current))")
        var fleets: [ChildProcess] = []
        for (index, shard) in shards.enumerated() {
            let path = "\(fleetDirectory)/credentials-\(index + 1).tsv"
            try shard.joined().write(toFile: path, atomically: true, encoding: .utf8)
            fleets.append(
                try ChildProcess(
                    try Binaries.path("unlockit-lock"),
                    [
                        "fleet", "run", "--dir", fleetDirectory, "--credentials", path, "--pairing", "--open-time", "\(openTime)",
                    ] + lockBroker, name: "fleet-\(index + 1)"))
        }
        for fleet in fleets { try await fleet.waitForLine(containing: "\"connected\"", timeout: .seconds(900)) }
        try await Network.waitUntil("every lock online", timeout: .seconds(120)) {
            let health = try await server.operations.get("/healthz")
            return (health.json["locksOnline"] as? Int ?? 0) >= count
        }

        let activatedAt = ContinuousClock.now
        progress = ProgressBar("activating locks", total: labels.count)
        try await forEach(labels, concurrency: 16, progress: &progress) { label, _ in
            let reply = try await client.post("/api/v1/locks/\(label.id)/activate", token: admin, ["setupCode": label.code])
            guard reply.status == 200 else { throw HarnessError("activate \(label.id): \(reply.status) \(reply.text)") }
        }
        let activationSeconds = activatedAt.duration(to: .now).seconds

        return BenchSite(
            directory: directory, broker: broker, server: server, fleets: fleets, admin: admin, employees: employees,
            signInUsers: signInUsers, locks: labels.map(\.id), startupSeconds: startupSeconds, registrationSeconds: registrationSeconds,
            activationSeconds: activationSeconds)
    }

    private init(
        directory: String, broker: TestBroker, server: TestServer, fleets: [ChildProcess], admin: String, employees: [String],
        signInUsers: [(email: String, password: String)], locks: [String], startupSeconds: Double, registrationSeconds: Double,
        activationSeconds: Double
    ) {
        self.directory = directory
        self.broker = broker
        self.server = server
        self.fleets = fleets
        self.admin = admin
        self.employees = employees
        self.signInUsers = signInUsers
        self.locks = locks
        self.startupSeconds = startupSeconds
        self.registrationSeconds = registrationSeconds
        self.activationSeconds = activationSeconds
    }

    /// A fleet process's counters (openings, denials, …) from its `stats` command.
    private static func stats(_ fleet: ChildProcess) async throws -> [String: Any] {
        let before = fleet.output.count
        fleet.send("stats")
        let line = try await fleet.waitForLine(containing: "\"counters\"", after: before, timeout: .seconds(30))
        return (try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
    }

    /// Relay openings counted by every lock of every fleet process.
    func openings() async throws -> Int {
        var total = 0
        for fleet in fleets {
            guard let openings = (try await Self.stats(fleet)["counters"] as? [String: Any])?["openings"] as? Int else {
                throw HarnessError("\(fleet.name) did not report its openings")
            }
            total += openings
        }
        return total
    }

    func stop() async {
        for fleet in fleets { await fleet.stop(grace: .seconds(30)) }
        await server.stop()
        await broker.stop()
    }
}

/// Runs `body` for every element with at most `concurrency` at a time.
func forEach<Element: Sendable>(
    _ elements: [Element], concurrency: Int, progress: inout ProgressBar, _ body: @escaping @Sendable (Element, Int) async throws -> Void
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var next = 0
        var done = 0
        while next < min(concurrency, elements.count) {
            let index = next
            group.addTask { try await body(elements[index], index) }
            next += 1
        }
        while try await group.next() != nil {
            done += 1
            progress.update(done)
            if next < elements.count {
                let index = next
                group.addTask { try await body(elements[index], index) }
                next += 1
            }
        }
    }
}

func say(_ text: String) {
    FileHandle.standardError.write(Data("· \(text)\n".utf8))
}
