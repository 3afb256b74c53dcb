import Foundation
import Glibc
import UnixSignals

/// SIGUSR1 is the pairing button; SIGINT and SIGTERM end the process cleanly.
enum Signals {
    /// Runs `onPairingButton` for each SIGUSR1 and returns at the first SIGINT or SIGTERM.
    static func run(onPairingButton: @Sendable () -> Void = {}) async {
        for await signal in await UnixSignalsSequence(trapping: .sigint, .sigterm, .sigusr1) {
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
