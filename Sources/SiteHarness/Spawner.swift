import Foundation
import Glibc
import Posix
import Synchronization

/// Starts child processes so that they end with this process, even when it cannot stop them itself
/// (a crash, SIGKILL): each child is started through util-linux's `setpriv --pdeathsig TERM`, which
/// asks the kernel to send it SIGTERM when its parent dies.
///
/// The kernel's parent is the thread that started the child, not the process: a child started from
/// one of Swift's pool threads would be ended when that thread retires. So every child is started
/// from one thread of its own that lives as long as the process.
///
/// Left open: a parent that dies between starting a child and `setpriv`'s request to the kernel
/// (about a millisecond, while `setpriv` loads) leaves that child running.
final class Spawner: Sendable {
    static let shared = Spawner()

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 on), which Swift's Glibc module does
    /// not declare; nil where the C library lacks it. Every child is started with it, so that it
    /// holds none of this process's descriptors: libmosquitto opens its sockets without
    /// close-on-exec, and a child holding a test's MQTT socket keeps that connection from closing.
    static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32).self)
    }()

    /// `setpriv --pdeathsig TERM --`, or nothing where `setpriv` is missing or too old (before
    /// util-linux 2.33) to know the option: children then start directly, as before.
    static let parentDeathPrefix: [String] = {
        guard let setpriv = try? Binaries.system("setpriv"), let truePath = try? Binaries.system("true") else { return [] }
        let prefix = [setpriv, "--pdeathsig", "TERM", "--"]
        let argv = (prefix + [truePath]).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // An old setpriv's complaint about the option is not for the user's terminal.
        var quiet = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&quiet)
        defer { posix_spawn_file_actions_destroy(&quiet) }
        posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        guard posix_spawn(&pid, setpriv, &quiet, nil, argv, environ) == 0 else { return [] }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status == 0 ? prefix : []
    }()

    private struct Job: Sendable {
        let body: @Sendable () -> Void
    }
    private let jobs = Mutex<[Job]>([])
    private let available = DispatchSemaphore(value: 0)

    private init() {
        let thread = Thread { [self] in
            ThreadName.setCurrent("child-spawner")
            while true {
                available.wait()
                let job = jobs.withLock { $0.removeFirst() }
                job.body()
            }
        }
        thread.start()
    }

    /// Runs `body` on the spawning thread and returns its result.
    func run<Result: Sendable>(_ body: @escaping @Sendable () -> Result) -> Result {
        let result = LockedBox<Result?>(nil)
        let done = DispatchSemaphore(value: 0)
        jobs.withLock {
            $0.append(
                Job {
                    result.set(body())
                    done.signal()
                })
        }
        available.signal()
        done.wait()
        return result.get()!
    }
}
