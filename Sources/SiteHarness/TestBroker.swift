import Foundation

/// A real mosquitto on a free loopback port, configured by `unlockit-server broker-setup`
/// (dynamic security, TCP_NODELAY), started and stopped by the test.
public final class TestBroker: Sendable {
    public let port: Int
    public let directory: String
    public let serverUsername = "unlockit-server"
    public let serverPassword: String
    private let process: LockedBox<ChildProcess?>

    public var url: String { "mqtt://127.0.0.1:\(port)" }
    /// The running mosquitto's process id.
    public var pid: pid_t? { process.get()?.pid }
    public var passwordFile: String { "\(directory)/server-mqtt-password" }

    private init(port: Int, directory: String, serverPassword: String) {
        self.port = port
        self.directory = directory
        self.serverPassword = serverPassword
        self.process = LockedBox(nil)
    }

    public static func start(in parent: String) async throws -> TestBroker {
        let port = try Network.freePort()
        let directory = "\(parent)/broker"
        let setup = try ChildProcess(
            try Binaries.path("unlockit-server"), ["broker-setup", "--dir", directory, "--port", "\(port)"], name: "broker-setup")
        guard try await setup.waitForExit() == 0 else { throw HarnessError("broker-setup failed: \(setup.output)") }
        let password = try String(contentsOfFile: "\(directory)/server-mqtt-password", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let broker = TestBroker(port: port, directory: directory, serverPassword: password)
        try await broker.startProcess()
        return broker
    }

    private func startProcess() async throws {
        let mosquitto = try ChildProcess(try Binaries.system("mosquitto"), ["-c", "\(directory)/mosquitto.conf"], name: "mosquitto")
        process.set(mosquitto)
        try await Network.waitUntil("mosquitto on port \(port)") {
            guard mosquitto.isRunning else { throw HarnessError("mosquitto exited: \(mosquitto.output)") }
            return Network.isListening(port: port)
        }
    }

    /// Stops the broker (SIGTERM) and starts it again on the same port with the same accounts, after
    /// `whileStopped` (a test's edit of the broker's files, as an operator's would be).
    public func restart(downtime: Duration = .milliseconds(500), whileStopped: () throws -> Void = {}) async throws {
        await stop()
        try await Task.sleep(for: downtime)
        try whileStopped()
        try await startProcess()
    }

    public func stop() async {
        if let process = process.get() { await process.stop() }
    }

    /// Runs `mosquitto_ctrl dynsec …` as the server's admin account.
    public func dynsec(_ arguments: [String]) async throws -> String {
        let ctrl = try ChildProcess(
            try Binaries.system("mosquitto_ctrl"),
            ["-h", "127.0.0.1", "-p", "\(port)", "-u", serverUsername, "-P", serverPassword, "dynsec"] + arguments, name: "mosquitto_ctrl")
        let status = try await ctrl.waitForExit()
        let output = ctrl.output.joined(separator: "\n")
        guard status == 0, !output.contains("Error") else { throw HarnessError("mosquitto_ctrl \(arguments): \(output)") }
        return output
    }

    /// An account that may publish and subscribe anywhere: the "privileged test client" that plays
    /// an attacker who captured traffic, or a technician with a broker console.
    public func addSuperuser(username: String, password: String) async throws {
        _ = try await dynsec(["createRole", "test-superuser"])
        for (type, topic) in [("publishClientSend", "#"), ("publishClientReceive", "#"), ("subscribePattern", "#")] {
            _ = try await dynsec(["addRoleACL", "test-superuser", type, topic, "allow"])
        }
        let ctrl = try ChildProcess(
            try Binaries.system("mosquitto_ctrl"),
            ["-h", "127.0.0.1", "-p", "\(port)", "-u", serverUsername, "-P", serverPassword, "dynsec", "createClient", username],
            name: "mosquitto_ctrl")
        ctrl.send(password)
        ctrl.send(password)
        guard try await ctrl.waitForExit() == 0 else { throw HarnessError("createClient failed: \(ctrl.output)") }
        _ = try await dynsec(["addClientRole", username, "test-superuser"])
    }
}

/// A value behind a lock, for test helpers shared between tasks.
public final class LockedBox<Value: Sendable>: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private var value: Value
    private let lock = NSLock()

    public init(_ value: Value) { self.value = value }
    public func get() -> Value { lock.withLock { value } }
    public func set(_ newValue: Value) { lock.withLock { value = newValue } }
    public func update(_ body: (inout Value) -> Void) { lock.withLock { body(&value) } }
}
