import Glibc

/// One process at a time runs or changes a lock's flash: an exclusive `flock` on a file beside the
/// flash (`<flash>.lock`, mode 0600), held as long as the claim lives and let go by the kernel when
/// the process ends, however it ends. The flash file itself cannot carry the lock: every write
/// replaces it with a new file. Without the claim, `unlockit-lock reset` could rewrite the flash of
/// a lock that is running, which would go on with the old key and write it back at its next save,
/// and both would write through the same temporary file.
public final class FlashClaim: Sendable {
    private let descriptor: Int32

    public enum ClaimError: Error, Equatable, CustomStringConvertible {
        /// Another process holds the claim: a lock runs on this flash.
        case inUse(String)
        case unavailable(path: String, reason: String)

        public var description: String {
            switch self {
            case .inUse(let path): "a lock is running on the state file \(path); stop it first"
            case .unavailable(let path, let reason): "cannot claim the lock's state file through \(path): \(reason)"
            }
        }
    }

    /// Claims the flash at `flashPath`, or throws at once if another process holds it.
    public init(flashPath: String) throws(ClaimError) {
        let path = flashPath + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .unavailable(path: path, reason: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno
            close(fd)
            throw reason == EWOULDBLOCK ? .inUse(flashPath) : .unavailable(path: path, reason: String(cString: strerror(reason)))
        }
        descriptor = fd
    }

    deinit { close(descriptor) }
}
