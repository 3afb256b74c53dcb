import Foundation

/// A real `unlockit-lock` process with its own state file.
public final class TestLock: Sendable {
    public let id: String
    public let setupCode: String
    public let statePath: String
    private let running = LockedBox<ChildProcess?>(nil)

    /// First boot (`unlockit-lock label`): creates the flash and reads the label.
    public convenience init(id: String, directory: String) async throws {
        try await self.init(id: id, statePath: "\(directory)/\(id).json")
    }

    /// First boot of a lock with the factory's device id, derived from its setup code; `name` names
    /// its state file.
    public convenience init(directory: String, name: String) async throws {
        try await self.init(id: nil, statePath: "\(directory)/\(name).json")
    }

    private init(id: String?, statePath: String) async throws {
        let label = try ChildProcess(
            try Binaries.path("unlockit-lock"), ["label", "--state", statePath, "--json"] + (id.map { ["--id", $0] } ?? []), name: "label")
        guard try await label.waitForExit() == 0, let line = label.output.first(where: { $0.hasPrefix("{") }),
            let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], let code = json["setupCode"],
            let labelled = json["id"], id == nil || labelled == id
        else { throw HarnessError("unlockit-lock label failed: \(label.output)") }
        self.id = labelled
        self.setupCode = code
        self.statePath = statePath
    }

    public var process: ChildProcess? { running.get() }

    /// Starts the lock and waits until it is connected to the broker.
    @discardableResult
    public func start(broker: String, password: String, pairing: Bool = true, arguments: [String] = [], waitForConnection: Bool = true)
        async throws -> ChildProcess
    {
        let process = try ChildProcess(
            try Binaries.path("unlockit-lock"),
            ["run", "--state", statePath, "--broker", broker] + (pairing ? ["--pairing"] : []) + arguments,
            environment: ["UNLOCKIT_LOCK_PASSWORD": password], name: id)
        running.set(process)
        if waitForConnection { try await process.waitForLine(containing: "connected to the broker") }
        return process
    }

    public func stop() async { await running.get()?.stop() }

    /// `unlockit-lock reset`: a new device key, not activated (the lock must be stopped).
    public func factoryReset() async throws {
        let reset = try ChildProcess(try Binaries.path("unlockit-lock"), ["reset", "--state", statePath], name: "reset")
        guard try await reset.waitForExit() == 0 else { throw HarnessError("unlockit-lock reset failed: \(reset.output)") }
    }
}
