import Glibc

/// Puts the terminal's settings back when a signal ends the process during a secret prompt, then
/// lets the signal do what it would have done; and around a stop (Ctrl-Z), so that the shell gets
/// the terminal as it was and the prompt takes its own settings back when continued (`fg`). A signal
/// handler may only touch memory that is already there and call async-signal-safe functions
/// (`tcsetattr`, `write`, `sigaction`, `sigprocmask`, `raise`), so the settings live at fixed
/// addresses, written before the handlers are installed.
enum EchoRestorer {
    /// The signals that end a process from the terminal or from outside.
    static let signals: [Int32] = [SIGINT, SIGQUIT, SIGHUP, SIGTERM]
    /// The terminal's stop key.
    static let stop = SIGTSTP

    /// The terminal's settings to restore.
    nonisolated(unsafe) static let terminal = fixed(termios())
    /// The prompt's own settings, to take again after a stop.
    nonisolated(unsafe) static let prompt = fixed(termios())
    /// The prompt's text, to show again after a stop (the shell's job line stands where it was).
    nonisolated(unsafe) static let promptText = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 256)
    nonisolated(unsafe) static let promptLength = fixed(0)

    /// Keeps the start of `text` (up to 256 bytes) as the prompt's text.
    static func setPromptText(_ text: String) {
        let bytes = Array(text.utf8.prefix(promptText.count))
        _ = promptText.initialize(from: bytes)
        promptLength.pointee = bytes.count
    }

    /// `value` at an address of its own, for good.
    private static func fixed<T>(_ value: T) -> UnsafeMutablePointer<T> {
        let pointer = UnsafeMutablePointer<T>.allocate(capacity: 1)
        pointer.initialize(to: value)
        return pointer
    }

    /// Installs the handlers for `signals` and `stop`; returns the actions they replaced, for `uninstall`.
    static func install() -> [sigaction] {
        _ = (terminal, prompt, promptText, promptLength)  // initialised before any handler can read them
        let ending = signals.map { number in
            handle(number) { number in
                tcsetattr(STDIN_FILENO, TCSAFLUSH, EchoRestorer.terminal)
                var newline: UInt8 = 10
                _ = write(STDERR_FILENO, &newline, 1)
                EchoRestorer.handle(number, with: SIG_DFL)
                raise(number)
            }
        }
        return ending + [handle(stop) { number in EchoRestorer.stopped(number) }]
    }

    /// Sets what `number` does (no flags, nothing more blocked while it runs); returns the action it
    /// replaced. Also called in the handlers.
    @discardableResult
    private static func handle(_ number: Int32, with handler: sighandler_t?) -> sigaction {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        var previous = sigaction()
        sigaction(number, &action, &previous)
        return previous
    }

    /// In the signal handler: the terminal as it was, the stop done as it would have been, and the
    /// prompt's settings, its text and this handler again once the process is continued. (A process group with
    /// no shell of its session to return to discards the stop, and goes straight on.)
    private static func stopped(_ number: Int32) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, terminal)
        var handler = handle(number, with: SIG_DFL)
        // The signal is blocked while its handler runs: let it through, to stop the process now.
        var only = sigset_t()
        sigemptyset(&only)
        sigaddset(&only, number)
        sigprocmask(SIG_UNBLOCK, &only, nil)
        raise(number)
        sigaction(number, &handler, nil)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, prompt)
        _ = write(STDERR_FILENO, promptText.baseAddress, promptLength.pointee)
    }

    /// Puts back the actions `install` replaced.
    static func uninstall(_ previous: [sigaction]) {
        for (number, action) in zip(signals + [stop], previous) {
            var action = action
            sigaction(number, &action, nil)
        }
    }
}
