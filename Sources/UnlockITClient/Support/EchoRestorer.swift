import Glibc

/// Puts the terminal's settings back when a signal ends the process during a secret prompt, then
/// lets the signal do what it would have done. A signal handler may only touch memory that is
/// already there and call async-signal-safe functions (`tcsetattr`, `write`, `sigaction`, `raise`),
/// so the settings live at a fixed address, written before the handlers are installed.
enum EchoRestorer {
    /// The signals that end a process from the terminal or from outside.
    static let signals: [Int32] = [SIGINT, SIGQUIT, SIGHUP, SIGTERM]

    /// The terminal's settings to restore.
    nonisolated(unsafe) static let terminal: UnsafeMutablePointer<termios> = {
        let pointer = UnsafeMutablePointer<termios>.allocate(capacity: 1)
        pointer.initialize(to: termios())
        return pointer
    }()

    /// Installs the handler for `signals`; returns the actions it replaced, for `uninstall`.
    static func install() -> [sigaction] {
        _ = terminal  // initialised before any handler can read it
        return signals.map { number in
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                tcsetattr(STDIN_FILENO, TCSAFLUSH, EchoRestorer.terminal)
                var newline: UInt8 = 10
                _ = write(STDERR_FILENO, &newline, 1)
                var fallback = sigaction()
                fallback.__sigaction_handler.sa_handler = SIG_DFL
                sigemptyset(&fallback.sa_mask)
                sigaction(number, &fallback, nil)
                raise(number)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            var previous = sigaction()
            sigaction(number, &action, &previous)
            return previous
        }
    }

    /// Puts back the actions `install` replaced.
    static func uninstall(_ previous: [sigaction]) {
        for (number, action) in zip(signals, previous) {
            var action = action
            sigaction(number, &action, nil)
        }
    }
}
