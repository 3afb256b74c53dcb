import Foundation
import Logging
import UnlockITCore

/// Loads the master key (environment, then file, creating the file on first start) and checks it
/// against the check value the database remembers.
public enum MasterKeyCheck {
    static let settingName = "master-key-check"

    public static func load(configuration: ServerConfiguration, store: any Store, logger: Logger) async throws -> MasterKey {
        let key: MasterKey
        if let text = configuration.masterKey {
            key = try MasterKey(text: text)
        } else {
            let path = configuration.resolvedMasterKeyFile
            if FileManager.default.fileExists(atPath: path) {
                key = try MasterKey.load(path: path)
            } else {
                guard try await store.setting(settingName) == nil else {
                    throw MasterKey.MasterKeyError.unreadable("\(path) (this database was set up with a master key that is missing)")
                }
                key = try MasterKey.create(path: path)
                logger.notice("created a new master key", metadata: ["file": "\(path)"])
            }
        }
        if let stored = try await store.setting(settingName) {
            guard stored == key.checkValue else { throw MasterKey.MasterKeyError.mismatch }
        } else {
            try await store.setSetting(settingName, value: key.checkValue)
        }
        return key
    }
}
