import Foundation
import Glibc
import Synchronization
import UnlockITCore
import UnlockITLocalization

/// Talking to the person at the terminal. Prompts go to stderr, so stdout stays clean for `--json`.
enum Terminal {
    static var stdinIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Set once a write to stdout failed (a full disk, a closed terminal): what the command printed,
    /// perhaps a password shown once, is lost, and the command must not report success.
    private static let outputLost = Atomic<Bool>(false)
    static var lostOutput: Bool { outputLost.load(ordering: .relaxed) }

    static func write(_ text: String, to fd: Int32 = STDOUT_FILENO) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written > 0 {
                offset += written
                continue
            }
            if written < 0 && errno == EINTR { continue }
            // A descriptor left non-blocking by whatever reads it: wait for room, briefly.
            if written < 0 && errno == EAGAIN {
                usleep(1000)
                continue
            }
            if fd == STDOUT_FILENO { outputLost.store(true, ordering: .relaxed) }
            return
        }
    }

    static func line(_ text: String) { write(text + "\n") }
    static func error(_ text: String) { write(text + "\n", to: STDERR_FILENO) }

    /// Reads one line from stdin; `nil` at end of input.
    static func readLine() -> String? { Swift.readLine(strippingNewline: true) }

    /// Asks for a line of text.
    static func ask(_ prompt: String) -> String? {
        write(prompt, to: STDERR_FILENO)
        return readLine()
    }

    /// Asks for a secret without echoing it. A signal that ends the process while it waits (Ctrl-C,
    /// Ctrl-\, a hang-up, `kill`) turns the echo back on first, so the shell is not left typing blind.
    static func askSecret(_ prompt: String) -> String? {
        write(prompt, to: STDERR_FILENO)
        var original = termios()
        guard tcgetattr(STDIN_FILENO, &original) == 0 else { return readLine() }
        EchoRestorer.terminal.pointee = original
        let previous = EchoRestorer.install()
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &original)
            EchoRestorer.uninstall(previous)
            write("\n", to: STDERR_FILENO)
        }
        return readLine()
    }

    /// A yes/no question; only an explicit yes (in the user's language) counts.
    static func confirm(_ question: String, _ l: Localizer) -> Bool {
        guard let answer = ask("\(question) \(l("prompt.yes_no")) ") else { return false }
        let normalized = answer.trimmingCharacters(in: .whitespaces).lowercased()
        return normalized == l("prompt.yes_short") || normalized == l("prompt.yes_long")
    }
}
