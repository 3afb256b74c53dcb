import Foundation

/// A real mosquitto on a free loopback port, configured by `unlockit-server broker-setup`
/// (dynamic security, TCP_NODELAY), started and stopped by the test.
public final class TestBroker: Sendable {
    public let port: Int
    /// The TLS listener's port (on 127.0.0.1), when started with certificates.
    public let tlsPort: Int?
    public let directory: String
    public let serverUsername = "unlockit-server"
    public let serverPassword: String
    private let process: LockedBox<ChildProcess?>

    public var url: String { "mqtt://127.0.0.1:\(port)" }
    /// The TLS listener's address, when started with certificates.
    public var tlsURL: String? { tlsPort.map { "mqtts://127.0.0.1:\($0)" } }
    /// The running mosquitto's process id.
    public var pid: pid_t? { process.get()?.pid }
    public var passwordFile: String { "\(directory)/server-mqtt-password" }

    private init(port: Int, tlsPort: Int?, directory: String, serverPassword: String) {
        self.port = port
        self.tlsPort = tlsPort
        self.directory = directory
        self.serverPassword = serverPassword
        self.process = LockedBox(nil)
    }

    /// A port found free may be taken before mosquitto binds it: the kernel hands the same range out
    /// as the source ports of the suite's many outgoing connections. mosquitto then exits at once,
    /// and the broker is set up again on another port, up to three times.
    ///
    /// With `certificates`, the broker has a TLS listener too, on 127.0.0.1, as
    /// `broker-setup --tls-cert/--tls-key` sets it up.
    public static func start(in parent: String, certificates: TestCertificates? = nil) async throws -> TestBroker {
        var exits: [String] = []
        for attempt in 1...3 {
            let port = try Network.freePort()
            let tlsPort = try certificates.map { _ in try Network.freePort() }
            let directory = attempt == 1 ? "\(parent)/broker" : "\(parent)/broker-\(attempt)"
            var arguments = ["broker-setup", "--dir", directory, "--port", "\(port)"]
            if let certificates, let tlsPort {
                arguments += [
                    "--tls-cert", certificates.certificateFile, "--tls-key", certificates.keyFile, "--tls-port", "\(tlsPort)", "--tls-host",
                    "127.0.0.1",
                ]
            }
            let setup = try ChildProcess(try Binaries.path("unlockit-server"), arguments, name: "broker-setup")
            guard try await setup.waitForExit() == 0 else { throw HarnessError("broker-setup failed: \(setup.output)") }
            let password = try String(contentsOfFile: "\(directory)/server-mqtt-password", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let broker = TestBroker(port: port, tlsPort: tlsPort, directory: directory, serverPassword: password)
            do {
                try await broker.startProcess()
                return broker
            } catch let exited as MosquittoExited {
                exits.append("port \(port): \(exited.output)")
            }
        }
        throw HarnessError("mosquitto exited at start three times: \(exits)")
    }

    private struct MosquittoExited: Error {
        let output: [String]
    }

    private func startProcess() async throws {
        let mosquitto = try ChildProcess(try Binaries.system("mosquitto"), ["-c", "\(directory)/mosquitto.conf"], name: "mosquitto")
        process.set(mosquitto)
        do {
            try await Network.waitUntil("mosquitto on port \(port)") {
                guard mosquitto.isRunning else { throw MosquittoExited(output: []) }
                return Network.isListening(port: port) && (tlsPort.map { Network.isListening(port: $0) } ?? true)
            }
        } catch is MosquittoExited {
            // Its last lines (why it exited) once its output is all read.
            _ = try? await mosquitto.waitForExit(timeout: .seconds(2))
            throw MosquittoExited(output: mosquitto.output)
        }
    }

    /// Stops the broker (SIGTERM) and starts it again on the same port with the same accounts, after
    /// `whileStopped` (a test's edit of the broker's files, as an operator's would be).
    public func restart(downtime: Duration = .milliseconds(500), whileStopped: () throws -> Void = {}) async throws {
        await stop()
        try await Task.sleep(for: downtime)
        try whileStopped()
        do {
            try await startProcess()
        } catch let exited as MosquittoExited {
            throw HarnessError("mosquitto exited on restart: \(exited.output)")
        }
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
