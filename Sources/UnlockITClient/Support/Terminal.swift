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

    /// Asks for a secret without echoing it, edited by ``SecretLine`` so that no length is cut off.
    /// A signal that ends the process while it waits (Ctrl-C, Ctrl-\, a hang-up, `kill`) turns the
    /// terminal's settings back first, so the shell is not left typing blind; so does Ctrl-Z, and
    /// `fg` takes the prompt's settings again.
    static func askSecret(_ prompt: String) -> String? {
        write(prompt, to: STDERR_FILENO)
        var original = termios()
        guard tcgetattr(STDIN_FILENO, &original) == 0 else { return readLine() }
        var silent = original
        // Signals stay on: Ctrl-C still ends the command.
        silent.c_lflag &= ~tcflag_t(ECHO | ICANON)
        withUnsafeMutableBytes(of: &silent.c_cc) { keys in
            keys[Int(VMIN)] = 1
            keys[Int(VTIME)] = 0
        }
        EchoRestorer.terminal.pointee = original
        EchoRestorer.prompt.pointee = silent
        EchoRestorer.setPromptText(prompt)
        let previous = EchoRestorer.install()
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &original)
            EchoRestorer.uninstall(previous)
            write("\n", to: STDERR_FILENO)
        }
        var line = SecretLine(terminal: original)
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = Glibc.read(STDIN_FILENO, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            // A terminal left non-blocking by whatever shares it: wait for what comes.
            if count < 0 && errno == EAGAIN {
                var ready = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
                _ = poll(&ready, 1, -1)
                continue
            }
            // The terminal failed or hung up: no line, not the part of one that had arrived (a paste
            // comes in pieces, and a cut secret would be sent as if whole).
            guard count > 0 else { return nil }
            for byte in chunk.prefix(count) {
                switch line.take(byte) {
                case .more: continue
                case .done: return line.text
                case .endOfInput: return nil
                }
            }
        }
    }

    /// A yes/no question; only an explicit yes (in the user's language) counts.
    static func confirm(_ question: String, _ l: Localizer) -> Bool {
        guard let answer = ask("\(question) \(l("prompt.yes_no")) ") else { return false }
        let normalized = answer.trimmingCharacters(in: .whitespaces).lowercased()
        return normalized == l("prompt.yes_short") || normalized == l("prompt.yes_long")
    }
}
