import Foundation
import Glibc
import Posix
import UnlockITCore
import UnlockITLocalization

/// The signed-in session, kept where only its owner can read it: `$XDG_CONFIG_HOME/unlockit/credentials`
/// (or `~/.config/unlockit/credentials`), mode 0600 in a 0700 folder, shared by every invocation.
/// A file others can read is refused, as ssh refuses a private key others can read.
struct Credentials: Codable, Sendable, Equatable {
    var server: String
    var token: String
    var expiresAt: Date
    var email: String
    var role: String

    static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let base: String
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            base = xdg
        } else {
            base = (environment["HOME"] ?? NSHomeDirectory()) + "/.config"
        }
        return base + "/unlockit/credentials"
    }

    private static var coder: (JSONEncoder, JSONDecoder) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return (encoder, decoder)
    }

    /// The stored session, `nil` if there is none. Throws if the file is readable by others, is not
    /// the user's own regular file (a symbolic link is refused, not followed), or is unreadable.
    /// The checks and the read are on one open descriptor, so the file cannot be swapped between them.
    static func load(_ l: Localizer) throws(CLIError) -> Credentials? {
        let path = Self.path()
        let exposed = CLIError(l("error.credentials_exposed", path), hint: l("hint.credentials_exposed", path), status: .insecureCredentials)
        let notAFile = CLIError(l("error.credentials_not_a_file", path), hint: l("hint.credentials_remove", path), status: .insecureCredentials)
        let notYours = CLIError(l("error.credentials_not_yours", path), hint: l("hint.credentials_not_yours", path), status: .insecureCredentials)
        let unreadable = CLIError(l("error.credentials_unreadable", path), hint: l("hint.credentials_remove", path), status: .failure)
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case ENOENT: return nil
            case ELOOP: throw notAFile
            // Left behind by `sudo unlockit login`, say: someone else's file, or in someone else's folder.
            case EACCES where [path, (path as NSString).deletingLastPathComponent].contains(where: { !Self.isOwn($0) }): throw notYours
            default: throw unreadable
            }
        }
        defer { close(fd) }
        guard let status = FileStatus(descriptor: fd) else { throw unreadable }
        guard status.kind == .regular else { throw notAFile }
        guard status.isOwnedByCurrentUser else { throw notYours }
        guard !status.isOpenToOthers else { throw exposed }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            guard count >= 0, data.count <= 1 << 20 else { throw unreadable }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        guard let credentials = try? coder.1.decode(Credentials.self, from: data) else { throw unreadable }
        return credentials
    }

    /// Writes the file atomically with mode 0600 (its folder 0700).
    func save(_ l: Localizer) throws(CLIError) {
        let path = Self.path()
        let directory = (path as NSString).deletingLastPathComponent
        let failure = CLIError(l("error.credentials_unwritable", path), status: .failure)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw failure
        }
        // A folder made earlier with a wider mode is narrowed; one that is not the user's is not used.
        guard let folder = FileStatus(linkAt: directory), folder.kind == .directory, folder.isOwnedByCurrentUser else { throw failure }
        if folder.isOpenToOthers { chmod(directory, 0o700) }
        guard let data = try? Self.coder.0.encode(self) else { throw failure }
        Self.removeLeftovers(of: path)
        // A name of its own, so that two sign-ins at once cannot write into or remove each other's file.
        let temporary = "\(path).\(getpid()).\(UInt32.random(in: .min ... .max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure }
        fchmod(fd, 0o600)
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
        close(fd)
        guard written == data.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw failure
        }
    }

    /// Removes the file; one already gone is fine.
    static func remove(_ l: Localizer) throws(CLIError) {
        try remove(at: path(), l)
    }

    static func remove(at path: String, _ l: Localizer) throws(CLIError) {
        guard unlink(path) == 0 || errno == ENOENT else {
            throw CLIError(l("error.credentials_not_removed", path), hint: l("hint.credentials_remove_yourself", path), status: .failure)
        }
        removeLeftovers(of: path)
    }

    /// Removes the copies `save` writes before renaming (`credentials.<pid>.<random>.tmp`) that a
    /// CLI killed in between left behind: each holds a session's token. A copy is its writer's until
    /// that process is gone, so a sign-in running meanwhile keeps its own.
    static func removeLeftovers(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let prefix = (path as NSString).lastPathComponent + "."
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where name.hasPrefix(prefix) && name.hasSuffix(".tmp") {
            let parts = name.dropFirst(prefix.count).dropLast(".tmp".count).split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, let pid = pid_t(parts[0]), pid > 0, UInt32(parts[1]) != nil else { continue }
            guard kill(pid, 0) != 0, errno == ESRCH else { continue }
            let leftover = directory + "/" + name
            guard let status = FileStatus(linkAt: leftover), status.kind == .regular, status.isOwnedByCurrentUser else { continue }
            unlink(leftover)
        }
    }

    /// Whether `path` (a link itself, not what it points to) is this user's, or cannot be looked at:
    /// then nothing says it is someone else's.
    private static func isOwn(_ path: String) -> Bool {
        FileStatus(linkAt: path)?.isOwnedByCurrentUser ?? true
    }
}
