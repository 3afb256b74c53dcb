import ArgumentParser
import Foundation
import LockFirmware
import LockProtocol
import MQTT
import UnlockITCore

@main
struct UnlockITLock: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlockit-lock",
        abstract: "The simulated UnlockIT lock firmware.",
        discussion: """
            A lock keeps its flash (device id, device key, the setup code on its label, whether it is \
            activated) in a state file. The first run creates it and prints the label. While running, \
            send SIGUSR1 or type "pair" on stdin to press the pairing button; "stats" prints the counters.
            """,
        subcommands: [Run.self, Label.self, Reset.self, Fleet.self],
        defaultSubcommand: Run.self)
}

/// Options shared by everything that runs locks.
struct BehaviourOptions: ParsableArguments {
    @Option(help: "Seconds the relay stays open after a granted unlock.")
    var openTime: Double = 3

    @Option(help: "Seconds a challenge stays valid.")
    var challengeLifetime: Double = 5

    @Option(help: "Seconds pairing mode lasts once entered.")
    var pairingWindow: Double = 300

    @Option(help: "Seconds a flash write takes (a slow flash; the lock answers nothing meanwhile).")
    var flashWriteTime: Double = 0

    var settings: LockSettings {
        LockSettings(
            openDuration: .milliseconds(Int64(openTime * 1000)), challengeLifetime: .milliseconds(Int64(challengeLifetime * 1000)),
            pairingWindow: .milliseconds(Int64(pairingWindow * 1000)), flashWriteTime: .milliseconds(Int64(flashWriteTime * 1000)))
    }

    func validate() throws {
        // Bounded above too: a day is far more than any lock needs, and `inf` or 1e300 seconds would
        // not fit the clock's arithmetic.
        // Counted in whole milliseconds: less than one would be none at all.
        guard [openTime, challengeLifetime, pairingWindow].allSatisfy({ $0 >= 0.001 && $0 <= 86_400 }) else {
            throw ValidationError("Times must be numbers of seconds from 0.001 to 86400.")
        }
        guard (0...60).contains(flashWriteTime) else { throw ValidationError("The flash write time must be 0–60 seconds.") }
    }
}

/// Reads the broker password from a file or the environment, never from the command line.
func brokerPassword(file: String?) throws -> String {
    if let file {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw ValidationError("Cannot read the password file \(file).")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
    if let password = ProcessInfo.processInfo.environment["UNLOCKIT_LOCK_PASSWORD"], !password.isEmpty { return password }
    throw ValidationError("Give the lock's MQTT password with --password-file or UNLOCKIT_LOCK_PASSWORD.")
}

/// The broker's address, and for `mqtts://` how its certificate is checked: against the
/// authorities in `caFile`, or the system's.
func parseBroker(_ text: String, caFile: String?) throws -> (BrokerAddress, MQTTTLS?) {
    guard let address = BrokerAddress(text) else {
        throw ValidationError("\"\(text)\" is not a broker address like mqtt://127.0.0.1:1883 or mqtts://broker.example.com:8883.")
    }
    if let caFile {
        guard address.usesTLS else { throw ValidationError("--ca-file is for a TLS broker (mqtts://), not \(text).") }
        guard FileManager.default.isReadableFile(atPath: caFile) else { throw ValidationError("Cannot read the CA file \(caFile).") }
    }
    if address.isPlainOnTheNetwork {
        FileHandle.standardError.write(
            Data(
                "warning: \(text) is reached without TLS: the lock's broker password and messages cross the network in the clear; use mqtts://\n".utf8
            ))
    }
    return (address, address.tls(caFile: caFile))
}

func parseLockID(_ text: String?) throws -> LockID? {
    guard let text else { return nil }
    guard let lock = LockID(text) else {
        throw ValidationError("\"\(text)\" is not a lock id: 3–64 lowercase letters, digits and hyphens.")
    }
    // Such an id comes from the setup code, made at first boot: one given here would not match it,
    // and the server would never register the lock.
    guard !lock.hasFactoryForm else {
        throw ValidationError(
            "\"\(text)\" has the form of a factory id (lock- and 32 hex digits), which comes from the setup code; leave --id out, or choose another id."
        )
    }
    return lock
}

/// Writes a line to stdout unbuffered, so a parent process reading a pipe sees it at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Says so on stderr when the flash at `path` was written but may not survive a power cut.
func warnIfNotDurable(_ saved: FlashFile.Saved?, path: String, undone what: String) {
    guard saved == .writtenNotDurable else { return }
    FileHandle.standardError.write(Data("warning: wrote \(path) but could not sync its folder: a power cut now could \(what)\n".utf8))
}
