import ArgumentParser
import Foundation
import LockFirmware
import LockProtocol
import UnlockITCore

struct Label: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the lock's label (device id and setup code), creating its flash on first boot.")

    @Option(help: "The lock's state file.")
    var state: String

    @Option(help: "The device id to use on first boot (default: the factory's, derived from the setup code).")
    var id: String?

    @Flag(help: "Print JSON: {\"id\":…,\"setupCode\":…}.")
    var json = false

    func run() throws {
        let file = FlashFile(path: state)
        // Reading a running lock's label is fine; only a first boot writes, and it claims the flash.
        let claim = file.exists ? nil : try FlashClaim(flashPath: state)
        let (flash, firstBoot) = try file.loadOrCreate(lock: try parseLockID(id))
        warnIfNotDurable(firstBoot, path: state, undone: "lose this identity and its label")
        withExtendedLifetime(claim) {}
        if json {
            say("{\"id\":\"\(flash.lock)\",\"setupCode\":\"\(flash.setupCode.formatted)\"}")
        } else {
            say("Device id:  \(flash.lock)")
            say("Setup code: \(flash.setupCode.formatted)")
        }
    }
}

struct Reset: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Factory reset: a new device key and not activated. The device id and setup code stay.")

    @Option(help: "The lock's state file.")
    var state: String

    func run() throws {
        // A running lock would go on with the old key and write it back: refused until it stops.
        let claim = try FlashClaim(flashPath: state)
        let file = FlashFile(path: state)
        var flash = try file.load()
        flash.factoryReset()
        let saved = try file.save(flash)
        withExtendedLifetime(claim) {}
        warnIfNotDurable(saved, path: state, undone: "bring back the old key and activation")
        say("\(flash.lock) reset to factory state; put it in pairing mode and activate it again.")
    }
}
