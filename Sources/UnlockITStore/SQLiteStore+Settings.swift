import Foundation
import GRDB
import UnlockITCore

extension SQLiteStore {
    public func setting(_ name: String) async throws -> String? {
        try read { db in try String.fetchOne(db, sql: "SELECT value FROM setting WHERE name = ?", arguments: [name]) }
    }

    public func setSetting(_ name: String, value: String) async throws {
        try write { db in
            try db.execute(
                sql: "INSERT INTO setting (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                arguments: [name, value])
        }
    }
}
