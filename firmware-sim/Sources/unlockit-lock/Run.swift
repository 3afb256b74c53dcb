import ArgumentParser
import Foundation
import LockFirmware
import LockProtocol
import MQTT
import UnlockITCore

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run one lock.")

    @Option(help: "The lock's state file (its flash). Created, with a new identity, on first boot.")
    var state: String

    @Option(help: "The broker, as mqtt://host:port, or mqtts://host:port for TLS.")
    var broker: String

    @Option(help: "For an mqtts:// broker: the PEM file of the authorities its certificate must chain to (else the system's).")
    var caFile: String?

    @Option(help: "A file holding the lock's MQTT password (else UNLOCKIT_LOCK_PASSWORD).")
    var passwordFile: String?

    @Option(help: "The device id to use on first boot (default: the factory's, derived from the setup code).")
    var id: String?

    @Flag(help: "Start in pairing mode, as if the button were held at power-on.")
    var pairing = false

    @OptionGroup var behaviour: BehaviourOptions

    func run() async throws {
        let (address, tls) = try parseBroker(broker, caFile: caFile)
        let password = try brokerPassword(file: passwordFile)
        // Held until the process ends: no other `run` or `reset` on this flash meanwhile.
        let claim = try FlashClaim(flashPath: state)
        let file = FlashFile(path: state)
        let (flash, firstBoot) = try file.loadOrCreate(lock: try parseLockID(id))
        if firstBoot != nil { printLabel(flash) }
        warnIfNotDurable(firstBoot, path: state, undone: "lose this identity and its label")
        let lock = flash.lock
        var device = LockDevice(flash: flash, settings: behaviour.settings)
        if pairing { device.enterPairingMode(now: .now) }

        let signals = await Signals.trap()
        let runtime = try LockRuntime(
            device: device, flashFile: file, broker: BrokerEndpoint(host: address.host, port: address.port, password: password, tls: tls),
            notify: { say("[\(lock)] \(describe($0))") })
        // An activated lock ignores the button: only a lock that took it says so.
        let inPairingMode = device.isPairing(now: .now)
        say("[\(lock)] firmware \(Flash.firmwareVersion), \(flash.activated ? "activated" : "not activated")\(inPairingMode ? ", pairing mode" : "")")
        runtime.start()
        // The client retries by itself and quietly: a lock that cannot get in says why, once for each
        // new reason (a certificate refused, a password refused, nothing listening), and again after it
        // was connected.
        let failures = Task {
            var said: String?
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(2))
                if runtime.isConnected { said = nil }
                guard !runtime.isConnected, let reason = runtime.connectionFailure, reason != said else { continue }
                said = reason
                say("[\(lock)] cannot reach the broker: \(reason)")
            }
        }

        let commands = StdinCommands { command in
            switch command {
            case "pair": runtime.enterPairingMode()
            case "stats":
                let counters = runtime.counters
                say(
                    "[\(lock)] stats openings=\(counters.openings) denials=\(counters.denials) malformed=\(counters.malformed) challenges=\(counters.challenges) relay=\(runtime.relayState.rawValue)"
                )
            default: say("[\(lock)] unknown command \"\(command.prefix(40))\" (pair, stats)")
            }
        }
        commands.start()
        await Signals.run(signals, onPairingButton: { runtime.enterPairingMode() })
        failures.cancel()
        say("[\(lock)] shutting down")
        await runtime.shutdown()
        withExtendedLifetime(claim) {}
    }
}

func printLabel(_ flash: Flash) {
    say("First boot. Label of this lock:")
    say("  Device id:  \(flash.lock)")
    say("  Setup code: \(flash.setupCode.formatted)")
}

func describe(_ notice: LockNotice) -> String {
    switch notice {
    case .connected: "connected to the broker"
    case .disconnected: "lost the broker; reconnecting"
    case .refused(let code): "the broker refused the connection (code \(code))"
    case .relay(let state): "relay \(state.rawValue)"
    case .pairingMode(let on): on ? "pairing mode on" : "pairing mode not available (already activated)"
    case .activated: "activated"
    case .denied(let reason): "denied: \(reason.rawValue)"
    case .malformedDropped: "dropped a malformed command"
    }
}
