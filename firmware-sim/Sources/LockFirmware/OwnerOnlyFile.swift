import Glibc
import Posix

/// A file only its owner may read or write, replaced whole: written to a temporary file beside it
/// (mode 0600 whatever the umask, or the mode a temporary left from an earlier attempt had) and
/// renamed over the old one, so that no reader sees half of it and an older file's wider mode goes
/// with it. A symbolic link planted as the temporary is refused, not followed, and so is anything
/// but a regular file (a FIFO there would otherwise block the write, and the lock's loop, for ever).
enum OwnerOnlyFile {
    enum Outcome: Equatable {
        /// The new file is in place; with `durable`, on the disk (the file, then its folder's entry
        /// for it) before ``write(_:to:durable:syncFolder:)`` returns, as flash is once its write returns.
        case written
        /// Nothing changed: the old file, if there was one, is as it was.
        case notWritten
        /// The new file is in place, and every reader sees it (the lock too, after a restart), but
        /// its folder's entry could not be flushed: a power cut before the kernel writes it out
        /// could still bring back the old file.
        case writtenNotDurable
    }

    /// Writes `bytes` to `path`. `syncFolder` flushes the folder holding the file at the path it is
    /// given (tests make it fail).
    static func write(
        _ bytes: [UInt8], to path: String, durable: Bool, syncFolder: (String) -> Bool = OwnerOnlyFile.syncFolder(of:)
    ) -> Outcome {
        let temporary = path + ".tmp"
        // Non-blocking: opening a FIFO for writing waits for a reader, and then fstat refuses it.
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return .notWritten }
        guard FileStatus(descriptor: fd)?.kind == .regular else {
            close(fd)
            return .notWritten
        }
        let written = fchmod(fd, 0o600) == 0 ? bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } : -1
        let synced = !durable || fsync(fd) == 0
        let closed = close(fd) == 0
        guard written == bytes.count, synced, closed, rename(temporary, path) == 0 else {
            unlink(temporary)
            return .notWritten
        }
        // Renamed: the new file is the one there is now, whatever the folder's sync says.
        return !durable || syncFolder(path) ? .written : .writtenNotDurable
    }

    /// The bytes of the regular file at `path`, at most `limit` of them; nil for anything else: no
    /// file, a symbolic link (not followed), a FIFO or device (which would block the read, or never
    /// end it), a longer file. As the write, it never waits on what another planted there.
    static func read(_ path: String, limit: Int = 1 << 16) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard FileStatus(descriptor: fd)?.kind == .regular else { return nil }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        // Until the end: a file longer than the limit (or growing past it meanwhile) is refused.
        while bytes.count <= limit {
            let got = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { return nil }
            if got == 0 { return bytes }
            bytes += chunk[..<got]
        }
        return nil
    }

    /// Flushes the folder holding `path`, so that a rename into it survives a power cut.
    static func syncFolder(of path: String) -> Bool {
        let folder = path.lastIndex(of: "/").map { String(path[..<$0]) }.map { $0.isEmpty ? "/" : $0 } ?? "."
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return fsync(fd) == 0
    }
}
