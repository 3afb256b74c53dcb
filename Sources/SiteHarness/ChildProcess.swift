import Foundation
import Glibc
import Synchronization

/// A real process started by a test, with its output (stdout and stderr together) collected line by line.
///
/// Built on `posix_spawn` and `waitpid` rather than Foundation's `Process`, whose `isRunning` is not
/// updated on Linux unless a run loop turns. The child gets SIGTERM if this process dies without
/// stopping it (see ``Spawner``).
public final class ChildProcess: Sendable {
    public let name: String
    public let pid: pid_t
    private let stdinFD: Int32
    private let collected = Lines()
    private let collectedErrors = Lines()
    private let inputOpen = Mutex(true)
    private let status = Mutex<Int32?>(nil)
    /// Every child started and not yet reaped, so that an interrupted program can end them all.
    private static let running = Mutex<Set<pid_t>>([])

    /// With `separateErrors`, stderr is collected apart from stdout (see ``errors``).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], name: String? = nil, separateErrors: Bool = false
    ) throws {
        self.name = name ?? URL(fileURLWithPath: executable).lastPathComponent
        var input: [Int32] = [0, 0]
        var output: [Int32] = [0, 0]
        var errorPipe: [Int32] = [-1, -1]
        guard pipe(&input) == 0, pipe(&output) == 0 else { throw HarnessError("pipe failed") }
        if separateErrors { guard pipe(&errorPipe) == 0 else { throw HarnessError("pipe failed") } }
        // Not inherited by other children; posix_spawn's dup2 gives this child its own copies. (A child
        // spawned between pipe() and here closes them too: every spawn closes all but its own three.)
        for fd in input + output + errorPipe where fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }

        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        let environmentLines = env.map { "\($0.key)=\($0.value)" }
        // Through `setpriv`, posix_spawn would succeed for a program that is not there.
        let prefix = Spawner.parentDeathPrefix
        if !prefix.isEmpty && access(executable, X_OK) != 0 {
            let reason = String(cString: strerror(errno))
            for fd in input + output + errorPipe where fd >= 0 { close(fd) }
            throw HarnessError("cannot start \(executable): \(reason)")
        }
        let (stdinRead, outputWrite, errorWrite) = (input[0], output[1], separateErrors ? errorPipe[1] : output[1])
        let (rc, pid) = Spawner.shared.run { () -> (Int32, pid_t) in
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_adddup2(&actions, stdinRead, 0)
            posix_spawn_file_actions_adddup2(&actions, outputWrite, 1)
            posix_spawn_file_actions_adddup2(&actions, errorWrite, 2)
            _ = Spawner.addCloseFrom?(&actions, 3)
            let argv = (prefix + [executable] + arguments).map { strdup($0) } + [nil]
            let envp = environmentLines.map { strdup($0) } + [nil]
            defer {
                argv.forEach { free($0) }
                envp.forEach { free($0) }
            }
            var pid: pid_t = 0
            let rc = SpawnAttributes.withDefaultSignals { posix_spawn(&pid, prefix.first ?? executable, &actions, &$0, argv, envp) }
            return (rc, pid)
        }
        close(input[0])
        close(output[1])
        if separateErrors { close(errorPipe[1]) }
        guard rc == 0 else {
            close(input[1])
            close(output[0])
            throw HarnessError("cannot start \(executable): \(String(cString: strerror(rc)))")
        }
        self.pid = pid
        self.stdinFD = input[1]
        _ = Self.running.withLock { $0.insert(pid) }

        Self.startReader(fd: output[0], into: collected)
        if separateErrors { Self.startReader(fd: errorPipe[0], into: collectedErrors) } else { collectedErrors.finish() }
    }

    private static func startReader(fd readFD: Int32, into collected: Lines) {
        let thread = Thread {
            var pending = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(readFD, $0.baseAddress, 4096) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                pending.append(contentsOf: buffer[0..<count])
                while let newline = pending.firstIndex(of: 0x0a) {
                    collected.append(String(decoding: pending[0..<newline], as: UTF8.self))
                    pending.removeSubrange(0...newline)
                }
            }
            if !pending.isEmpty { collected.append(String(decoding: pending, as: UTF8.self)) }
            collected.finish()
            close(readFD)
        }
        thread.start()
    }

    /// Reaps the process if it has ended.
    public var isRunning: Bool {
        status.withLock { status in
            guard status == nil else { return false }
            var raw: Int32 = 0
            let result = waitpid(pid, &raw, WNOHANG)
            guard result == pid else { return result == 0 }
            // Exit code, or 128 + signal number as a shell reports it.
            status = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
            _ = Self.running.withLock { $0.remove(pid) }
            return false
        }
    }

    public var output: [String] { collected.all }
    /// stderr, when started with `separateErrors`.
    public var errors: [String] { collectedErrors.all }

    /// Ends the process's stdin.
    public func closeInput() {
        inputOpen.withLock { open in
            if open { close(stdinFD) }
            open = false
        }
    }
    public var exitCode: Int32? { isRunning ? nil : status.withLock { $0 } }

    /// Waits until a line of output after the first `skip` lines contains `text`; returns that line.
    /// Fails at once if the process ends (and its output is read to the end) without saying it.
    @discardableResult
    public func waitForLine(containing text: String, after skip: Int = 0, timeout: Duration = .seconds(10)) async throws -> String {
        var found: String?
        try await Network.waitUntil("\"\(text)\" from \(name)", timeout: timeout) {
            let ended = collected.isFinished && !isRunning
            found = output.dropFirst(skip).first { $0.contains(text) }
            if found == nil && ended {
                throw HarnessError(
                    "\(name) ended with status \(exitCode ?? -1) before saying \"\(text)\"; it said: \(output.suffix(10).joined(separator: " | "))")
            }
            return found != nil
        }
        return found!
    }

    public func lines(containing text: String) -> [String] { output.filter { $0.contains(text) } }

    /// Writes a line to the process's stdin; nothing once ``closeInput()`` has closed it (the
    /// descriptor's number may by then belong to something else).
    public func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        inputOpen.withLock { open in
            guard open else { return }
            _ = bytes.withUnsafeBytes { write(stdinFD, $0.baseAddress, $0.count) }
        }
    }

    public func signal(_ number: Int32) {
        if isRunning { kill(pid, number) }
    }

    /// SIGSTOP, and waits until every thread of the process has stopped. `kill` returns before that:
    /// the kernel stops the other threads only once one of them has taken the signal, and on a busy
    /// machine a thread that is running meanwhile (say, one answering a message) goes on for a while.
    public func suspend(timeout: Duration = .seconds(10)) async throws {
        signal(SIGSTOP)
        try await Network.waitUntil("\(name) to stop", timeout: timeout) { try threadStates().allSatisfy { $0 == "T" || $0 == "t" } }
    }

    /// SIGCONT: a process stopped by ``suspend(timeout:)`` runs again.
    public func resume() { signal(SIGCONT) }

    /// The scheduler state (`R`, `S`, `T`, …) of each of the process's threads, from `/proc`.
    private func threadStates() throws -> [Character] {
        let tasks = "/proc/\(pid)/task"
        guard isRunning, let threads = try? FileManager.default.contentsOfDirectory(atPath: tasks), !threads.isEmpty else {
            throw HarnessError("\(name) is not running")
        }
        // A thread that ended meanwhile has no stat to read.
        return threads.compactMap { ProcStat(path: "\(tasks)/\($0)/stat")?.state }
    }

    /// SIGTERM, then SIGKILL if the process has not ended after `grace`. Returns the exit status.
    @discardableResult
    public func stop(grace: Duration = .seconds(5)) async -> Int32 {
        signal(SIGTERM)
        try? await Network.waitUntil("\(name) to stop", timeout: grace) { !isRunning }
        kill9()
        return exitCode ?? -1
    }

    /// SIGKILL: the process dies without any chance to say goodbye.
    public func kill9() {
        guard isRunning else { return }
        kill(pid, SIGKILL)
        while isRunning { usleep(1000) }
    }

    /// Ends every child this process started that is still running: SIGTERM, and SIGKILL after
    /// `grace`. For a program that is interrupted before it could stop its children in order.
    public static func terminateAll(grace: Duration = .seconds(2)) {
        let pids = running.withLock { $0 }
        for pid in pids { kill(pid, SIGTERM) }
        let deadline = ContinuousClock.now + grace
        var left = pids
        while !left.isEmpty && ContinuousClock.now < deadline {
            left = left.filter { waitpid($0, nil, WNOHANG) == 0 }
            if !left.isEmpty { usleep(10_000) }
        }
        for pid in left {
            kill(pid, SIGKILL)
            waitpid(pid, nil, 0)
        }
        running.withLock { $0.subtract(pids) }
    }

    /// Waits for the process to end by itself; returns its exit status.
    public func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        try await Network.waitUntil("\(name) to exit", timeout: timeout) { !isRunning }
        // The process is gone, but its last lines may still sit in the pipe for the reader threads
        // (a loaded machine showed an empty output after a successful exit). The pipes close with
        // the process unless it left a child holding them, hence the bound (and no failure past it).
        do {
            try await Network.waitUntil("\(name)'s last output", timeout: .seconds(5)) { collected.isFinished && collectedErrors.isFinished }
        } catch is HarnessError {}
        return exitCode ?? -1
    }

    deinit {
        kill9()
        closeInput()
    }
}

/// Output lines collected by a reader thread.
private final class Lines: Sendable {
    private let storage = Mutex<(lines: [String], finished: Bool)>(([], false))
    func append(_ line: String) { storage.withLock { $0.lines.append(line) } }
    /// The writer closed its end: no more lines will come.
    func finish() { storage.withLock { $0.finished = true } }
    var all: [String] { storage.withLock { $0.lines } }
    var isFinished: Bool { storage.withLock { $0.finished } }
}
