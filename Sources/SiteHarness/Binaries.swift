import Foundation

/// Where the project's executables are: `UNLOCKIT_BIN_DIR`, else beside the test bundle
/// (`swift build` puts both in `.build/debug`). `scripts/test` builds them before testing.
public enum Binaries {
    public static var directory: String {
        if let directory = ProcessInfo.processInfo.environment["UNLOCKIT_BIN_DIR"] { return directory }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // The test runner may sit inside an .xctest bundle folder.
        while url.pathExtension == "xctest" || url.lastPathComponent == "Contents" || url.lastPathComponent == "MacOS" {
            url.deleteLastPathComponent()
        }
        return url.path
    }

    public static func path(_ name: String) throws -> String {
        let path = "\(directory)/\(name)"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw HarnessError("\(name) is not built in \(directory); run `swift build` first (scripts/test does)")
        }
        return path
    }

    /// mosquitto and its tools live in sbin on Debian.
    public static func system(_ name: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/bin"]
        guard let found = folders.map({ "\($0)/\(name)" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw HarnessError("\(name) is not installed (apt-get install mosquitto mosquitto-clients)")
        }
        return found
    }
}

public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A fresh temporary folder, removed by ``remove()`` or, at the latest, when the last reference to
/// it goes away (a test suite that keeps one per test leaves nothing behind in `/tmp`). Keep the
/// value itself, not only its `path`, for as long as the folder is in use.
public final class TemporaryDirectory: Sendable {
    public let path: String

    /// A new folder in `base` (the system's temporary folder if none).
    public init(_ prefix: String = "unlockit-test", in base: String? = nil) throws {
        let path = (base.map { $0.hasSuffix("/") ? $0 : $0 + "/" } ?? NSTemporaryDirectory()) + "\(prefix)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        self.path = path
    }

    deinit { remove() }

    /// Removes the folder and everything in it. Tries again while it still exists: a removal that
    /// races another (an interrupted benchmark cleans up from two places) stops at the first file the
    /// other removed.
    public func remove() {
        for _ in 0..<5 where FileManager.default.fileExists(atPath: path) {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}
