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

enum ResourceLimits {
    /// A fleet holds three descriptors per lock (libmosquitto's socket and its wake-up pair): raise the
    /// soft limit to the hard one, and the hard one too where the process may.
    static func raiseOpenFiles(to wanted: rlim_t = 1 << 20) {
        let resource = __rlimit_resource_t(UInt32(RLIMIT_NOFILE.rawValue))
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return }
        var raised = rlimit(rlim_cur: wanted, rlim_max: max(wanted, limit.rlim_max))
        if setrlimit(resource, &raised) != 0 {
            raised = rlimit(rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max)
            _ = setrlimit(resource, &raised)
        }
    }
}
