import Foundation
import LockProtocol
import SiteHarness
import Testing
import UnlockITCore

/// The simulator's own commands as a device's owner uses them, on real processes.
@Suite(.timeLimit(.minutes(10)))
struct LockSimulatorEndToEndTests {
    @Test("A factory reset waits for the lock to stop: refused while it runs, as is a second lock on the same flash")
    func resetNeedsAStoppedLock() async throws {
        let directory = try TemporaryDirectory("simulator")
        defer { directory.remove() }
        let lock = try await TestLock(id: "lock-reset", directory: directory.path)
        func deviceKey() throws -> String? {
            let flash = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: lock.statePath))) as? [String: Any]
            return flash?["deviceKey"] as? String
        }
        let key = try #require(try deviceKey())
        func simulator(_ arguments: [String]) async throws -> (status: Int32, errors: String) {
            let process = try ChildProcess(
                try Binaries.path("unlockit-lock"), arguments, environment: ["UNLOCKIT_LOCK_PASSWORD": "unused"], name: arguments[0],
                separateErrors: true)
            let status = try await process.waitForExit()
            try await Task.sleep(for: .milliseconds(20))  // the readers' last lines
            return (status, process.errors.joined(separator: "\n"))
        }

        // No broker is needed: the lock claims its flash before it connects.
        let running = try await lock.start(broker: "mqtt://127.0.0.1:1", password: "unused", waitForConnection: false)
        try await running.waitForLine(containing: "firmware")
        let refused = try await simulator(["reset", "--state", lock.statePath])
        #expect(refused.status != 0)
        #expect(refused.errors.contains("a lock is running on the state file \(lock.statePath); stop it first"), "\(refused)")
        let twin = try await simulator(["run", "--state", lock.statePath, "--broker", "mqtt://127.0.0.1:1"])
        #expect(twin.status != 0)
        #expect(twin.errors.contains("a lock is running on the state file"), "\(twin)")
        #expect(try deviceKey() == key)

        await lock.stop()
        let reset = try await simulator(["reset", "--state", lock.statePath])
        #expect(reset.status == 0, "\(reset)")
        #expect(try deviceKey() != key)
    }

    @Test("A fleet refuses a slow flash, which would stall every lock on its loop (single locks take it: LockProtocolEndToEndTests)")
    func aFleetRefusesASlowFlash() async throws {
        let directory = try TemporaryDirectory("simulator")
        defer { directory.remove() }
        let credentials = directory.path + "/credentials.tsv"
        try Data("lock-a\tpassword\n".utf8).write(to: URL(fileURLWithPath: credentials))
        let fleet = try ChildProcess(
            try Binaries.path("unlockit-lock"),
            ["fleet", "run", "--dir", directory.path, "--broker", "mqtt://127.0.0.1:1", "--credentials", credentials, "--flash-write-time", "2"],
            name: "fleet", separateErrors: true)
        #expect(try await fleet.waitForExit() != 0)
        try await Task.sleep(for: .milliseconds(20))  // the readers' last lines
        #expect(fleet.errors.joined().contains("--flash-write-time is for a single lock"), "\(fleet.errors)")
    }

    @Test("A CA file is refused for a plain broker and when it cannot be read, by a lock and by a fleet, before anything starts")
    func aCAFileIsForATLSBroker() async throws {
        let directory = try TemporaryDirectory("simulator")
        defer { directory.remove() }
        let credentials = directory.path + "/credentials.tsv"
        try Data("lock-a\tpassword\n".utf8).write(to: URL(fileURLWithPath: credentials))
        let ca = directory.path + "/ca.pem"
        try Data("authority".utf8).write(to: URL(fileURLWithPath: ca))
        let cases: [(broker: String, ca: String, says: String)] = [
            ("mqtt://127.0.0.1:1", ca, "--ca-file is for a TLS broker (mqtts://)"),
            ("mqtts://127.0.0.1:1", ca + ".missing", "Cannot read the CA file"),
        ]
        for (broker, file, says) in cases {
            for command in [
                ["run", "--state", directory.path + "/flash.json", "--broker", broker, "--ca-file", file],
                ["fleet", "run", "--dir", directory.path, "--broker", broker, "--credentials", credentials, "--ca-file", file],
            ] {
                let process = try ChildProcess(
                    try Binaries.path("unlockit-lock"), command, environment: ["UNLOCKIT_LOCK_PASSWORD": "password"], name: "lock",
                    separateErrors: true)
                #expect(try await process.waitForExit() != 0)
                try await Task.sleep(for: .milliseconds(20))  // the readers' last lines
                #expect(process.errors.joined().contains(says), "\(command): \(process.errors)")
            }
        }
        // Nothing was made: no flash, no label.
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/flash.json"))
    }

    @Test("A lock told a plain broker address off loopback warns that its password would cross the network in the clear")
    func aPlainNetworkBrokerIsWarnedOf() async throws {
        let directory = try TemporaryDirectory("simulator")
        defer { directory.remove() }
        let cases = [("mqtt://192.0.2.1:1883", true), ("mqtt://127.0.0.1:1", false), ("mqtts://192.0.2.1:8883", false)]
        for (index, (broker, warns)) in cases.enumerated() {
            let lock = try ChildProcess(
                try Binaries.path("unlockit-lock"), ["run", "--state", directory.path + "/flash-\(index).json", "--broker", broker],
                environment: ["UNLOCKIT_LOCK_PASSWORD": "password"], name: "lock", separateErrors: true)
            // Started: the first boot's label comes after the broker's address is checked.
            _ = try await lock.waitForLine(containing: "Setup code", timeout: .seconds(20))
            try await Task.sleep(for: .milliseconds(50))  // the error reader's lines
            let warned = lock.errors.contains { $0.contains("is reached without TLS") }
            _ = await lock.stop()
            #expect(warned == warns, "\(broker): \(lock.errors)")
        }
    }

    @Test("A fleet says how many of its locks cannot reach the broker, and why")
    func aFleetSaysWhyItsLocksAreOut() async throws {
        let directory = try TemporaryDirectory("simulator")
        defer { directory.remove() }
        let initFleet = try ChildProcess(
            try Binaries.path("unlockit-lock"), ["fleet", "init", "--dir", directory.path, "--count", "3", "--prefix", "out"], name: "fleet-init")
        #expect(try await initFleet.waitForExit() == 0)
        let labels = try String(contentsOfFile: directory.path + "/labels.tsv", encoding: .utf8).split(separator: "\n")
        let credentials = directory.path + "/credentials.tsv"
        try Data(labels.map { "\($0.split(separator: "\t")[0])\tpassword\n" }.joined().utf8).write(to: URL(fileURLWithPath: credentials))
        // Nothing listens on the port.
        let fleet = try ChildProcess(
            try Binaries.path("unlockit-lock"),
            ["fleet", "run", "--dir", directory.path, "--broker", "mqtt://127.0.0.1:\(try Network.freePort())", "--credentials", credentials],
            name: "fleet")
        // Once each lock has tried (a line for fewer may come first on a slow machine).
        let line = try await fleet.waitForLine(containing: #""Connection refused":3"#, timeout: .seconds(20))
        _ = await fleet.stop()
        #expect(line == #"{"unreachable":{"Connection refused":3}}"#, "\(fleet.output)")
    }

    @Test("A new lock's device id is the factory's, made from its setup code; one of that form given with --id is refused")
    func aFactoryIDComesFromTheSetupCode() async throws {
        let directory = try TemporaryDirectory("simulator")
        defer { directory.remove() }
        let lock = try await TestLock(directory: directory.path, name: "factory")
        #expect(FactoryID.matches(try #require(LockID(lock.id)), try #require(SetupCode(lock.setupCode))), "\(lock.id)")
        // Another lock's factory id given with --id would not match the new lock's own code.
        let twin = try ChildProcess(
            try Binaries.path("unlockit-lock"), ["label", "--state", "\(directory.path)/twin.json", "--id", lock.id], name: "twin",
            separateErrors: true)
        #expect(try await twin.waitForExit() != 0)
        try await Task.sleep(for: .milliseconds(20))  // the readers' last lines
        #expect(twin.errors.joined().contains("has the form of a factory id"), "\(twin.errors)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory.path)/twin.json"))
    }

    @Test("The pairing button is ignored by an activated lock, and its start-up line says so")
    func anActivatedLockIgnoresTheButton() async throws {
        let directory = try TemporaryDirectory("simulator")
        defer { directory.remove() }
        let lock = try await TestLock(id: "lock-button", directory: directory.path)
        let fresh = try await lock.start(broker: "mqtt://127.0.0.1:1", password: "unused", pairing: true, waitForConnection: false)
        #expect(try await fresh.waitForLine(containing: "firmware").hasSuffix("not activated, pairing mode"))
        await lock.stop()
        // The flash as an activation leaves it.
        let url = URL(fileURLWithPath: lock.statePath)
        var flash = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        flash["activated"] = true
        try JSONSerialization.data(withJSONObject: flash).write(to: url)
        let activated = try await lock.start(broker: "mqtt://127.0.0.1:1", password: "unused", pairing: true, waitForConnection: false)
        let line = try await activated.waitForLine(containing: "firmware")
        #expect(line.hasSuffix(", activated"), "\(line)")
        await lock.stop()
    }
}
