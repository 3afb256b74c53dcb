import Foundation
import Glibc
import UnixSignals

/// SIGUSR1 is the pairing button; SIGINT and SIGTERM end the process cleanly.
///
/// The signals are trapped before the lock starts (``trap()``), then handled (``run(_:onPairingButton:)``):
/// trapped only after it had connected, a pairing button pressed by a busy host's test right after
/// the lock said so could find SIGUSR1 still at its default action, which ends the process.
enum Signals {
    static func trap() async -> UnixSignalsSequence { await UnixSignalsSequence(trapping: .sigint, .sigterm, .sigusr1) }

    /// Runs `onPairingButton` for each SIGUSR1 and returns at the first SIGINT or SIGTERM.
    static func run(_ signals: UnixSignalsSequence, onPairingButton: @Sendable () -> Void = {}) async {
        for await signal in signals {
            if signal == .sigusr1 {
                onPairingButton()
            } else {
                return
            }
        }
    }
}

/// Reads command lines from stdin on a thread of its own (reading blocks).
/// End of input is not a command to stop: a lock started with stdin closed keeps running.
struct StdinCommands: Sendable {
    let handler: @Sendable (String) -> Void

    func start() {
        let handler = self.handler
        let thread = Thread {
            while let line = readLine() {
                let command = line.trimmingCharacters(in: .whitespaces)
                if !command.isEmpty { handler(command) }
            }
        }
        thread.start()
    }
}
