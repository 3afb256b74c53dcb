import Foundation

/// A real `unlockit-server serve` process on a fresh SQLite file, connected to a ``TestBroker``.
public final class TestServer: Sendable {
    public let directory: String
    public let environment: [String: String]
    public let process: ChildProcess
    public let port: Int
    /// The operations listener's port: `/healthz` and `/metrics`.
    public let operationsPort: Int
    public var api: APIClient { APIClient(baseURL: "http://127.0.0.1:\(port)") }
    public var operations: APIClient { APIClient(baseURL: "http://127.0.0.1:\(operationsPort)") }
    public var databasePath: String { environment["UNLOCKIT_DATABASE"]! }

    private init(directory: String, environment: [String: String], process: ChildProcess, port: Int, operationsPort: Int) {
        self.directory = directory
        self.environment = environment
        self.process = process
        self.port = port
        self.operationsPort = operationsPort
    }

    public static func environment(broker: TestBroker, directory: String, extra: [String: String] = [:]) -> [String: String] {
        var environment = [
            "UNLOCKIT_DATABASE": "\(directory)/data/unlockit.sqlite",
            "UNLOCKIT_MQTT_URL": broker.url,
            "UNLOCKIT_MQTT_PASSWORD_FILE": broker.passwordFile,
            "UNLOCKIT_HTTP_PORT": "0",
            "UNLOCKIT_OPERATIONS_PORT": "0",
            "UNLOCKIT_LOG_LEVEL": "info",
        ]
        for (key, value) in extra { environment[key] = value }
        return environment
    }

    /// Starts the server and waits until `/healthz` (on the operations listener) says it is
    /// connected to the broker.
    public static func start(broker: TestBroker, directory: String, extra: [String: String] = [:]) async throws -> TestServer {
        let environment = environment(broker: broker, directory: directory, extra: extra)
        let tag = UUID().uuidString.prefix(6)
        let portFile = "\(directory)/port-\(tag)"
        let operationsPortFile = "\(directory)/operations-port-\(tag)"
        let process = try ChildProcess(
            try Binaries.path("unlockit-server"), ["serve", "--port-file", portFile, "--operations-port-file", operationsPortFile],
            environment: environment)
        func port(in file: String) -> Int {
            Int((try? String(contentsOfFile: file, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        }
        var ports = (api: 0, operations: 0)
        try await Network.waitUntil("the server's port files") {
            guard process.isRunning else { throw HarnessError("unlockit-server exited: \(process.output.suffix(20))") }
            ports = (port(in: portFile), port(in: operationsPortFile))
            return ports.api > 0 && ports.operations > 0
        }
        let server = TestServer(directory: directory, environment: environment, process: process, port: ports.api, operationsPort: ports.operations)
        try await server.waitUntilHealthy()
        return server
    }

    /// The default is long: the suite's first seconds load both cores, and a server started then
    /// once took over 15 s to report healthy on a freshly built clone. A server that never does is
    /// reported with its last answer and the end of its log.
    public func waitUntilHealthy(timeout: Duration = .seconds(60)) async throws {
        var last = "no answer yet"
        do {
            try await Network.waitUntil("the server to be healthy", timeout: timeout) {
                do {
                    let health = try await operations.get("/healthz")
                    last = health.description
                    return health.status == 200
                } catch {
                    last = "\(error)"
                    return false
                }
            }
        } catch {
            throw HarnessError("\(error); /healthz: \(last); the server's log ends: \(process.output.suffix(15))")
        }
    }

    /// `unlockit-server bootstrap`: creates a company and its admin; returns the initial password.
    public func bootstrap(company: String, adminEmail: String) async throws -> String {
        let (status, output) = try await command(["bootstrap", "--company", company, "--admin-email", adminEmail])
        guard status == 0, let line = output.first(where: { $0.hasPrefix("Initial password") }), let password = line.split(separator: " ").last
        else { throw HarnessError("bootstrap failed: \(output)") }
        return String(password)
    }

    /// Runs `unlockit-server` with `arguments` on this server's settings (an operator's command on
    /// the server host), and returns its exit status and its output (stdout and stderr together).
    public func command(_ arguments: [String]) async throws -> (status: Int32, output: [String]) {
        let process = try ChildProcess(try Binaries.path("unlockit-server"), arguments, environment: environment, name: arguments.first ?? "command")
        let status = try await process.waitForExit()
        return (status, process.output)
    }

    /// Bootstraps a company and returns a signed-in admin token (the first-login change done).
    public func adminSession(company: String = "Acme", email: String = "admin@acme.test") async throws -> String {
        let initial = try await bootstrap(company: company, adminEmail: email)
        return try await api.signIn(email: email, password: initial, newPassword: "admin password \(company)")
    }

    public func stop() async { await process.stop() }
}
