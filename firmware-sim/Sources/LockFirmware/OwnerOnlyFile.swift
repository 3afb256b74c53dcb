import Glibc

/// A file only its owner may read or write, replaced whole: written to a temporary file beside it
/// (mode 0600 whatever the umask, or the mode a temporary left from an earlier attempt had) and
/// renamed over the old one, so that no reader sees half of it and an older file's wider mode goes
/// with it. A symbolic link planted as the temporary is refused, not followed.
enum OwnerOnlyFile {
    /// Whether `bytes` were written to `path`; with `durable`, on the disk (the file, then its
    /// folder's entry for it) before this returns, as flash is once its write returns.
    static func write(_ bytes: [UInt8], to path: String, durable: Bool) -> Bool {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        let written = fchmod(fd, 0o600) == 0 ? bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } : -1
        let synced = !durable || fsync(fd) == 0
        let closed = close(fd) == 0
        guard written == bytes.count, synced, closed, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return !durable || syncFolder(of: path)
    }

    /// Flushes the folder holding `path`, so that a rename into it survives a power cut.
    private static func syncFolder(of path: String) -> Bool {
        let folder = path.lastIndex(of: "/").map { String(path[..<$0]) }.map { $0.isEmpty ? "/" : $0 } ?? "."
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return fsync(fd) == 0
    }
}
