import Foundation
import Glibc

/// A file that holds a secret (the master key, the broker password): read only when it is a regular
/// file that neither its group nor others can read, as ssh treats a private key; made new, only its
/// owner's, and on the disk before it is used.
enum PrivateFile {
    enum Failure: Error, Equatable {
        case unreadable
        /// Readable by its group or others: its permission bits.
        case exposed(mode: Int)
    }

    /// The text of the file at `path` (a symbolic link is followed, and its target checked).
    static func read(_ path: String) throws(Failure) -> String {
        let file = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file),
            attributes[.type] as? FileAttributeType == .typeRegular,
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue
        else { throw .unreadable }
        guard mode & 0o077 == 0 else { throw .exposed(mode: mode) }
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { throw .unreadable }
        return text
    }

    /// Why ``create(_:text:)`` wrote nothing.
    struct NotWritten: Error {
        let reason: String
    }

    /// Writes `text` to a new file at `path`, mode 0600, never replacing one (nor following a link),
    /// and syncs it and its folder's entry: a secret lost to a power cut after it was used (a database
    /// sealed under a master key, a broker's accounts made with a password) cannot be had back. A
    /// file that could not be written whole is removed again.
    static func create(_ path: String, text: String) throws(NotWritten) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw NotWritten(reason: String(cString: strerror(errno))) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        let closed = close(fd) == 0
        guard written == bytes.count, synced, closed else {
            unlink(path)
            throw NotWritten(reason: "the write or its sync failed")
        }
        let parent = (path as NSString).deletingLastPathComponent
        let folder = open(parent.isEmpty ? "." : parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            _ = fsync(folder)
            close(folder)
        }
    }
}
