import Foundation
import Glibc
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

    /// The stored session, `nil` if there is none. Throws if the file is readable by others or unreadable.
    static func load(_ l: Localizer) throws(CLIError) -> Credentials? {
        let path = Self.path()
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        guard info.st_mode & 0o077 == 0, info.st_uid == getuid() else {
            throw CLIError(l("error.credentials_exposed", path), hint: l("hint.credentials_exposed", path), status: .insecureCredentials)
        }
        guard let data = FileManager.default.contents(atPath: path), let credentials = try? coder.1.decode(Credentials.self, from: data) else {
            throw CLIError(l("error.credentials_unreadable", path), hint: l("hint.credentials_unreadable", path), status: .failure)
        }
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
        guard let data = try? Self.coder.0.encode(self) else { throw failure }
        let temporary = path + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure }
        fchmod(fd, 0o600)
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
        close(fd)
        guard written == data.count, rename(temporary, path) == 0 else { throw failure }
    }

    static func remove() { unlink(path()) }
}
