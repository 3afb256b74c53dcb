import Glibc

/// A file only its owner may read or write, replaced whole: written to a temporary file beside it
/// (mode 0600 whatever the umask, or the mode a temporary left from an earlier attempt had) and
/// renamed over the old one, so that no reader sees half of it and an older file's wider mode goes
/// with it.
enum OwnerOnlyFile {
    /// Whether `bytes` were written to `path`; with `durable`, flushed to the disk before the rename.
    static func write(_ bytes: [UInt8], to path: String, durable: Bool) -> Bool {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        let written = fchmod(fd, 0o600) == 0 ? bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } : -1
        if durable { fsync(fd) }
        close(fd)
        guard written == bytes.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }
}
