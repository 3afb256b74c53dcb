import Foundation
import Glibc
import SiteHarness
import Testing

/// The CLI on a terminal of its own (a pseudo-terminal that is its controlling terminal, in a
/// session of its own), for what only a terminal shows: prompts, echo, Ctrl-C.
@Suite(.timeLimit(.minutes(10)))
struct CLITerminalEndToEndTests {
    /// `unlockit` running on a fresh pseudo-terminal. The test keeps the terminal's other end open
    /// to type on it and to read its settings, also after the CLI is gone.
    final class OnTerminal {
        let master: Int32
        let terminal: Int32
        let pid: pid_t
        /// Whether the terminal echoed before the CLI started, as a terminal does.
        let echoedAtStart: Bool
        /// The terminal's settings before the CLI started: what it must leave behind.
        let settingsAtStart: termios
        /// The CLI's configuration folder (`XDG_CONFIG_HOME`), removed with the terminal.
        let home: TemporaryDirectory
        private(set) var screen = ""
        private var reaped = false

        /// `underJobControl`: started by a shell with job control (`sh -c 'set -m; …'`), which
        /// prints `STOPPED=` and the status when the CLI stops or ends, waits for a line, and then
        /// continues it in the foreground with `fg`. Without one the CLI's process group has no shell
        /// to return to, and the kernel discards a stop.
        init(_ arguments: [String], underJobControl: Bool = false) throws {
            home = try TemporaryDirectory("unlockit-tty")
            master = PseudoTerminal.openMaster(O_RDWR | O_NOCTTY | O_CLOEXEC)
            guard master >= 0, PseudoTerminal.grant(master) == 0, PseudoTerminal.unlock(master) == 0 else {
                throw HarnessError("no pseudo-terminal")
            }
            var name = [CChar](repeating: 0, count: 128)
            guard PseudoTerminal.name(master, &name, name.count) == 0 else { throw HarnessError("no pseudo-terminal name") }
            let path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            terminal = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
            guard terminal >= 0 else { throw HarnessError("cannot open \(path)") }

            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            // Opened after the new session starts, so it becomes the CLI's controlling terminal.
            posix_spawn_file_actions_addopen(&actions, 0, path, O_RDWR, 0)
            posix_spawn_file_actions_adddup2(&actions, 0, 1)
            posix_spawn_file_actions_adddup2(&actions, 0, 2)
            let environment = [
                "XDG_CONFIG_HOME=\(home.path)", "TZ=UTC", "LANG=C", "LC_ALL=", "LC_MESSAGES=", "UNLOCKIT_LANG=", "TERM=dumb",
                "PATH=/usr/bin:/bin",
            ]
            let command =
                underJobControl
                ? ["/bin/sh", "-c", #"set -m; "$0" "$@"; echo "STOPPED=$?"; read -r line; fg"#, try Binaries.path("unlockit")] + arguments
                : [try Binaries.path("unlockit")] + arguments
            let argv = command.map { strdup($0) } + [nil]
            let envp = environment.map { strdup($0) } + [nil]
            defer {
                argv.forEach { free($0) }
                envp.forEach { free($0) }
            }
            var settings = termios()
            // Read before the CLI starts: once started, it may reach its prompt (echo off) at once.
            echoedAtStart = tcgetattr(terminal, &settings) == 0 && settings.c_lflag & tcflag_t(ECHO) != 0
            settingsAtStart = settings
            var pid: pid_t = 0
            let rc = SpawnAttributes.withDefaultSignals(flags: SpawnAttributes.newSession) {
                posix_spawn(&pid, argv[0]!, &actions, &$0, argv, envp)
            }
            guard rc == 0 else { throw HarnessError("cannot start unlockit: \(String(cString: strerror(rc)))") }
            self.pid = pid
        }

        deinit {
            if !reaped {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            }
            close(master)
            close(terminal)
        }

        /// Starts the CLI and waits until it shows `prompt` with the echo off, as a secret's prompt does.
        static func atPrompt(_ arguments: [String], prompt: String, underJobControl: Bool = false) async throws -> OnTerminal {
            let cli = try OnTerminal(arguments, underJobControl: underJobControl)
            guard try await cli.wait(until: { cli.screen.contains(prompt) }) else { throw HarnessError("no prompt: \(cli.screen)") }
            guard try await cli.wait(until: { !cli.echoes }) else { throw HarnessError("the prompt left the echo on: \(cli.screen)") }
            return cli
        }

        /// Whether the terminal's settings are those it had before the CLI started: its modes, and the
        /// line editing's keys and its VMIN and VTIME.
        var settingsRestored: Bool {
            var now = termios()
            guard tcgetattr(terminal, &now) == 0 else { return false }
            let before = settingsAtStart
            let keys = { (settings: termios) in withUnsafeBytes(of: settings.c_cc) { Array($0) } }
            return now.c_lflag == before.c_lflag && now.c_iflag == before.c_iflag && now.c_oflag == before.c_oflag
                && now.c_cflag == before.c_cflag && keys(now) == keys(before)
        }

        /// Whether the terminal echoes what is typed.
        var echoes: Bool {
            var settings = termios()
            return tcgetattr(terminal, &settings) == 0 && settings.c_lflag & tcflag_t(ECHO) != 0
        }

        /// Types `text` 256 bytes at a time, each piece once the terminal has room; false if it has
        /// none for `timeout`.
        func typeWhenReady(_ text: String, timeout: Duration = .seconds(20)) async throws -> Bool {
            let bytes = Array(text.utf8)
            let deadline = ContinuousClock.now + timeout
            var offset = 0
            while offset < bytes.count {
                var room = pollfd(fd: master, events: Int16(POLLOUT), revents: 0)
                guard poll(&room, 1, 0) > 0, room.revents & Int16(POLLOUT) != 0 else {
                    guard ContinuousClock.now < deadline else { return false }
                    _ = try await wait(until: { false }, timeout: .milliseconds(10))
                    continue
                }
                let piece = bytes[offset..<min(offset + 256, bytes.count)]
                let written = piece.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
                if written > 0 { offset += written } else if errno != EINTR { return false }
            }
            return true
        }

        func type(_ text: String) {
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
        }

        /// Reads what the CLI wrote until `condition` holds; false after `timeout`.
        func wait(until condition: () -> Bool, timeout: Duration = .seconds(20)) async throws -> Bool {
            let deadline = ContinuousClock.now + timeout
            while !condition() {
                guard ContinuousClock.now < deadline else { return false }
                var ready = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
                if poll(&ready, 1, 0) > 0 && ready.revents & Int16(POLLIN) != 0 {
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    let count = read(master, &buffer, buffer.count)
                    if count > 0 { screen += String(decoding: buffer[0..<count], as: UTF8.self) }
                    continue
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            return true
        }

        /// The CLI's wait status once it has ended; nil if it runs past `timeout`.
        func exit(timeout: Duration = .seconds(20)) async throws -> Int32? {
            let deadline = ContinuousClock.now + timeout
            var status: Int32 = 0
            while waitpid(pid, &status, WNOHANG) == 0 {
                guard ContinuousClock.now < deadline else { return nil }
                // What it writes while ending is read, so that it never blocks on a full terminal.
                _ = try await wait(until: { false }, timeout: .milliseconds(20))
            }
            reaped = true
            return status
        }
    }

    /// glibc's pseudo-terminal calls, which Swift's Glibc module does not declare (they need `_XOPEN_SOURCE`).
    enum PseudoTerminal {
        static func function<T>(_ name: String, as type: T.Type) -> T {
            guard let symbol = dlsym(nil, name) else { fatalError("\(name) is not in the C library") }
            return unsafeBitCast(symbol, to: type)
        }
        static let openMaster = function("posix_openpt", as: (@convention(c) (Int32) -> Int32).self)
        static let grant = function("grantpt", as: (@convention(c) (Int32) -> Int32).self)
        static let unlock = function("unlockpt", as: (@convention(c) (Int32) -> Int32).self)
        static let name = function("ptsname_r", as: (@convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32).self)
    }

    @Test(
        "A signal that ends the CLI at a password prompt leaves the terminal echoing again",
        arguments: [("Ctrl-C", SIGINT), ("kill", SIGTERM), ("hang-up", SIGHUP)])
    func signalAtPasswordPrompt(name: String, signal: Int32) async throws {
        let cli = try await OnTerminal.atPrompt(
            ["--lang", "en", "login", "--server", "http://127.0.0.1:1", "--email", "a@b.test"], prompt: "Password: ")
        #expect(cli.echoedAtStart)
        // Ctrl-C is typed, for the terminal to turn it into SIGINT; the others are sent.
        if signal == SIGINT { cli.type("\u{03}") } else { kill(cli.pid, signal) }
        let status = try #require(try await cli.exit(), "\(name): the CLI did not end")
        // Ended by the signal itself, as without the handler, so the shell sees the usual status.
        #expect(status & 0x7f == signal, "\(name): wait status \(status)")
        #expect(cli.echoes, "\(name): the terminal was left without echo")
        #expect(cli.settingsRestored, "\(name): the terminal was left in other settings")
    }

    @Test("--password-stdin on a terminal asks with a prompt and without echo")
    func passwordStdinOnTerminal() async throws {
        let cli = try await OnTerminal.atPrompt(
            ["--lang", "en", "login", "--server", "http://127.0.0.1:1", "--email", "a@b.test", "--password-stdin"], prompt: "Password: ")
        cli.type("hunter2-on-screen\n")
        let status = try #require(try await cli.exit())
        #expect(status >> 8 == 7, "wait status \(status): \(cli.screen)")  // the server cannot be reached
        #expect(!cli.screen.contains("hunter2"), "\(cli.screen)")
        #expect(cli.settingsRestored)
    }

    @Test("An ID token typed at its prompt is not echoed")
    func idTokenOnTerminal() async throws {
        let cli = try await OnTerminal.atPrompt(
            ["--lang", "en", "login", "--server", "http://127.0.0.1:1", "--id-token", "-", "--client-id", "cli"], prompt: "ID token: ")
        cli.type("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJvbi1zY3JlZW4ifQ.c2ln\n")
        let status = try #require(try await cli.exit())
        #expect(status >> 8 == 7, "wait status \(status): \(cli.screen)")  // the server cannot be reached
        #expect(!cli.screen.contains("eyJhbGciOiJFUzI1NiJ9"), "\(cli.screen)")
        #expect(cli.settingsRestored)
    }

    @Test("An ID token longer than the terminal's line buffer arrives whole, with the line's editing keys working")
    func aLongIDTokenArrivesWhole() async throws {
        // The request is read and the connection closed unanswered: what matters is what was sent.
        let server = try ScriptedHTTPServer { _ in nil }
        let cli = try await OnTerminal.atPrompt(
            ["--lang", "en", "login", "--server", "http://127.0.0.1:\(server.port)", "--id-token", "-", "--client-id", "cli"], prompt: "ID token: ")
        // Over 4,095 bytes, where a terminal's own line editing cuts a line off. A mistyped start,
        // taken back with the erase key and Ctrl-U, is not sent.
        let token = "eyJhbGciOiJSUzI1NiJ9." + String(repeating: "eyJncm91cHMiOlsiYSJdfQ", count: 400) + ".c2lnbmF0dXJl"
        #expect(token.utf8.count > 8_000)
        cli.type("x\u{7F}typo\u{15}")
        // Typed in pieces, each once the terminal has room for it: a write to a full terminal would
        // wait for the CLI to read, and for ever if it had ended.
        #expect(try await cli.typeWhenReady(token + "\n"), "the CLI stopped reading the token")
        let status = try #require(try await cli.exit())
        #expect(status >> 8 != 0, "wait status \(status): \(cli.screen)")
        let sent = server.requests.filter { $0.hasPrefix("POST /api/v1/auth/oidc ") }
        #expect(sent.count == 1, "\(sent.map { $0.prefix(200) })")
        #expect(sent.first?.contains(#""idToken":"\#(token)""#) == true, "the token did not arrive whole")
        #expect(sent.first?.contains("typo") == false)
        #expect(!cli.screen.contains("eyJncm91cHMiOlsiYSJdfQ"), "\(cli.screen.suffix(500))")
        #expect(cli.settingsRestored, "the terminal was left in other settings")
    }

    @Test("Ctrl-Z at a password prompt gives the shell the terminal as it was; fg takes the prompt back, without echo")
    func stopAtPasswordPrompt() async throws {
        let cli = try await OnTerminal.atPrompt(
            ["--lang", "en", "login", "--server", "http://127.0.0.1:1", "--email", "a@b.test"], prompt: "Password: ", underJobControl: true)
        cli.type("hunter")
        cli.type("\u{1A}")
        // Stopped (148 = 128 + SIGTSTP), and the shell has the terminal as it was before the CLI.
        #expect(try await cli.wait(until: { cli.screen.contains("STOPPED=148") }), "the CLI did not stop: \(cli.screen)")
        #expect(cli.settingsRestored, "the shell got the terminal in the prompt's settings")
        // fg: the prompt's settings again, so that the rest is not shown, and the prompt again.
        cli.type("\n")
        #expect(try await cli.wait(until: { !cli.echoes }), "the prompt did not take its settings back")
        #expect(
            try await cli.wait(until: { cli.screen.components(separatedBy: "Password: ").count == 3 }),
            "the prompt was not shown again: \(cli.screen)")
        cli.type("2-on-screen\n")
        let status = try #require(try await cli.exit())
        #expect(status >> 8 == 7, "wait status \(status): \(cli.screen)")  // the server cannot be reached
        #expect(!cli.screen.contains("2-on-screen") && !cli.screen.contains("hunter"), "\(cli.screen)")
        #expect(cli.settingsRestored)
    }
}
