import Foundation
import Logging
import SiteHarness
import Testing
import UnlockITStore

@testable import UnlockITServer

/// The master key a server starts with must be the one its database's sealed keys were made with:
/// a wrong one, or none where one was used, stops the start instead of making a new one.
@Suite struct MasterKeyCheckTests {
    static let logger: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }()

    func matches(_ error: any Error, _ expected: String) -> Bool {
        guard let error = error as? MasterKey.MasterKeyError else { return false }
        return switch (error, expected) {
        case (.mismatch, "mismatch"), (.unreadable, "unreadable"): true
        default: false
        }
    }

    @Test("The first start makes the key and records its check; a wrong or a missing key is refused, and nothing replaces it")
    func aWrongOrMissingKeyStopsTheStart() async throws {
        let folder = try TemporaryDirectory("unlockit-master-key")
        defer { folder.remove() }
        let store = try SQLiteStore(path: "\(folder.path)/unlockit.sqlite")
        var configuration = ServerConfiguration()
        configuration.masterKeyFile = "\(folder.path)/master.key"

        let first = try await MasterKeyCheck.load(configuration: configuration, store: store, logger: Self.logger)
        let file = try Data(contentsOf: URL(fileURLWithPath: "\(folder.path)/master.key"))
        let attributes = try FileManager.default.attributesOfItem(atPath: "\(folder.path)/master.key")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // Started again: the same key, from its file.
        #expect(try await MasterKeyCheck.load(configuration: configuration, store: store, logger: Self.logger).checkValue == first.checkValue)

        // Another key, given in the environment: refused.
        var other = configuration
        other.masterKey = String(repeating: "ab", count: 32)
        await #expect { try await MasterKeyCheck.load(configuration: other, store: store, logger: Self.logger) } throws: {
            matches($0, "mismatch")
        }
        // The file lost: refused, and no new key is made in its place.
        try FileManager.default.removeItem(atPath: "\(folder.path)/master.key")
        await #expect { try await MasterKeyCheck.load(configuration: configuration, store: store, logger: Self.logger) } throws: {
            matches($0, "unreadable")
        }
        #expect(!FileManager.default.fileExists(atPath: "\(folder.path)/master.key"))
        // Restored from the backup, it works again.
        try file.write(to: URL(fileURLWithPath: "\(folder.path)/master.key"))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: "\(folder.path)/master.key")
        #expect(try await MasterKeyCheck.load(configuration: configuration, store: store, logger: Self.logger).checkValue == first.checkValue)
    }
}
