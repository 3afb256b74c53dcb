import Foundation
import GRDB
import UnlockITCore

/// The embedded store: one SQLite file in WAL mode, through GRDB.
///
/// Reads run concurrently on a small pool of connections; writes are serialized by GRDB's single
/// writer, which is also what makes the check-then-change steps below (unique names, the last admin)
/// race-free.
public final class SQLiteStore: Store {
    let pool: DatabasePool

    /// Opens (creating if needed) the database at `path` and migrates it to the current schema.
    /// The file and its WAL companions are made readable by the owner only: they hold password hashes.
    public init(path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty && !FileManager.default.fileExists(atPath: directory) {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(5)
        configuration.label = "unlockit"
        configuration.prepareDatabase { db in
            // WAL with synchronous=NORMAL: a commit never corrupts the file; a power cut may lose the
            // last few commits, never half of one.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let previousMask = umask(0o077)
        defer { umask(previousMask) }
        pool = try DatabasePool(path: path, configuration: configuration)
        for suffix in ["", "-wal", "-shm"] { chmod(path + suffix, 0o600) }
        try Migrations.migrator.migrate(pool)
    }

    /// The names of the migrations applied to this database, oldest first.
    public func appliedMigrations() async throws -> [String] {
        try await pool.read { db in try Migrations.migrator.appliedMigrations(db) }
    }

    func insertAudit(_ event: AuditEvent, _ db: Database) throws {
        var record = AuditRecord(event)
        try record.insert(db)
    }
}
