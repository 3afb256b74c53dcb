import Foundation
import GRDB
import Synchronization
import UnlockITCore

/// The embedded store: one SQLite file in WAL mode, through GRDB.
///
/// Reads run concurrently on a small pool of connections; writes are serialized by GRDB's single
/// writer, which is also what makes the check-then-change steps below (unique names, the last admin)
/// race-free.
public final class SQLiteStore: Store {
    let pool: DatabasePool
    /// A connection used only to checkpoint the write-ahead log, so that the writer never waits for it.
    private let checkpointer: DatabaseQueue
    /// The audit log's ordered, group-committed write queue (``append(_:)``, ``enqueue(_:)``).
    let audit: AuditBatcher
    /// Read-only connections for the lookups on every request (see ``readStatement(_:_:)``).
    private let hotReaders: [HotReader]
    /// Read-only connections of the audit log's pages alone (``auditEvents(_:)``), which may take
    /// seconds: on the pool's, a few of them at once would leave the store's other reads waiting for
    /// a connection, on the threads every request runs on.
    let auditReaders: DatabasePool
    /// How many audit pages are read at once; more wait their turn, suspended.
    static let auditReaderCount = 2
    /// One bit per hot reader, set while a caller holds it.
    private let hotReadersBusy = Atomic<UInt>(0)
    private let nextHotReader = Atomic<Int>(0)

    /// Whether the database at `path` exists and has every migration of this version applied: read
    /// only, so that an operator's command beside a running server of an older version changes
    /// nothing of its schema (the server's start migrates it).
    public static func isCurrent(path: String) throws -> Bool {
        guard FileManager.default.fileExists(atPath: path) else { return false }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(5)
        return try DatabaseQueue(path: path, configuration: configuration).read { db in
            try Migrations.migrator.hasCompletedMigrations(db)
        }
    }

    /// Opens (creating if needed) the database at `path` and migrates it to the current schema.
    /// The file and its WAL companions are made readable by the owner only: they hold password hashes.
    /// `auditCapacity`: how many audit events may wait for their commit before ``auditHasRoom`` is
    /// false; `onAuditFailure` hears of every failed audit commit (it is retried).
    public init(path: String, auditCapacity: Int = 10_000, onAuditFailure: @escaping @Sendable (any Error) -> Void = { _ in }) throws {
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
            // Checkpoints (and their fsync, ~10 ms here) run in maintain(), not inside the commit of
            // whichever request crosses the 1,000-page mark; this is only the backstop.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 20000")
        }
        let previousMask = umask(0o077)
        defer { umask(previousMask) }
        let pool = try DatabasePool(path: path, configuration: configuration)
        self.pool = pool
        for suffix in ["", "-wal", "-shm"] { chmod(path + suffix, 0o600) }
        let unknown = try pool.read { db in
            try Set(Migrations.migrator.appliedIdentifiers(db)).subtracting(Migrations.migrator.migrations).sorted()
        }
        guard unknown.isEmpty else { throw SchemaTooNew(path: path, unknown: unknown) }
        try Migrations.migrator.migrate(pool)
        var checkpointConfiguration = Configuration()
        checkpointConfiguration.busyMode = .timeout(5)
        checkpointConfiguration.label = "unlockit.checkpoint"
        checkpointer = try DatabaseQueue(path: path, configuration: checkpointConfiguration)
        var hotConfiguration = Configuration()
        hotConfiguration.readonly = true
        hotConfiguration.busyMode = .timeout(5)
        hotConfiguration.label = "unlockit.hot"
        hotReaders = try (0..<min(UInt.bitWidth, max(4, 2 * ProcessInfo.processInfo.activeProcessorCount))).map { _ in
            HotReader(connection: try DatabaseQueue(path: path, configuration: hotConfiguration))
        }
        var auditConfiguration = Configuration()
        auditConfiguration.readonly = true
        auditConfiguration.busyMode = .timeout(5)
        auditConfiguration.label = "unlockit.audit"
        auditConfiguration.maximumReaderCount = Self.auditReaderCount
        auditReaders = try DatabasePool(path: path, configuration: auditConfiguration)
        audit = AuditBatcher(capacity: auditCapacity, onFailure: onAuditFailure) { [pool] events in
            try pool.write { db in
                try Self.insertAudit(events, db)
            }
        }
    }

    /// Copies committed pages from the write-ahead log into the database (PASSIVE: it waits for no
    /// reader or writer), so that the log stays small and commits never pay for a checkpoint.
    public func maintain() throws {
        try checkpointer.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
    }

    /// The names of the migrations applied to this database, oldest first.
    public func appliedMigrations() async throws -> [String] {
        try read { db in try Migrations.migrator.appliedMigrations(db) }
    }

    // MARK: Running transactions

    /// A read transaction, run on the calling thread.
    ///
    /// GRDB's async API hops to a dispatch queue and back, which costs about 0.2 ms of latency per
    /// call on a loaded two-core machine, several times more than the queries themselves. The store's
    /// transactions are all short, so they run inline instead: `dispatch_sync` executes the block on
    /// the caller's thread whenever the connection is free, and only waits when it is busy. The one
    /// read that may be long, a page of the audit log, has connections of its own (``auditEvents(_:)``).
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.read(body)
    }

    /// Reads outside any transaction, each statement consistent on its own: for the lookups on the
    /// path of every request, where a transaction's BEGIN and COMMIT would cost more than the query.
    ///
    /// They run on read-only connections of their own: borrowing one from the pool (its lock,
    /// semaphore, key paths and schema check) cost more than the queries themselves, and a plain
    /// serial queue per connection halved the session lookup.
    ///
    /// A free connection is taken when there is one, not the next in turn: a thread that finds its
    /// connection busy sleeps until the holder is done, and on a loaded machine the holder may just
    /// have been preempted mid-query. Taking them in turn from two connections, two handler threads
    /// collided about 400 times a second at 8,000 unlocks/s, each waiting 0.3 ms on average and up
    /// to 9.4 ms (`perf sched`). There are twice as many connections as cores (Swift's executor runs
    /// a thread per core), so all are busy only in a pile-up; then the caller waits for one in turn.
    ///
    /// Each connection keeps the statements it has prepared (``HotReader``), so `body` gets `query`'s.
    func readStatement<T>(_ query: HotQuery, _ body: (Statement) throws -> T) throws -> T {
        let all: UInt = hotReaders.count == UInt.bitWidth ? ~0 : (1 << UInt(hotReaders.count)) - 1
        var busy = hotReadersBusy.load(ordering: .relaxed)
        while case let free = all & ~busy, free != 0 {
            let index = free.trailingZeroBitCount
            let (claimed, current) = hotReadersBusy.compareExchange(
                expected: busy, desired: busy | (1 << UInt(index)), ordering: .acquiringAndReleasing)
            if claimed {
                defer { hotReadersBusy.bitwiseAnd(~(1 << UInt(index)), ordering: .releasing) }
                return try hotReaders[index].run(query, body)
            }
            busy = current
        }
        let turn = nextHotReader.add(1, ordering: .relaxed).oldValue
        return try hotReaders[Int(UInt(bitPattern: turn) % UInt(hotReaders.count))].run(query, body)
    }

    /// A write transaction, run on the calling thread (see ``read(_:)``); writes are serialized by
    /// GRDB's single writer.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.write(body)
    }

    /// A write whose transaction records an audit event of its own (an admin change, a company's
    /// creation, a sign-in, a sign-out). The events queued before it are committed first, so that the log's order, its
    /// ids, is the order events were handed in: an unlock answered before an admin disabled its user
    /// comes before the disabling, not after it.
    func auditedWrite<T>(_ body: (Database) throws -> T) async throws -> T {
        try await audit.flush()
        return try write(body)
    }

    func insertAudit(_ event: AuditEvent, _ db: Database) throws {
        try Self.insertAudit(CollectionOfOne(event), db)
    }

    /// Inserts `event` with `changes`, what the write around it did to the row as it was.
    func insertAudit(_ event: AuditEvent, recording changes: [AuditChange], _ db: Database) throws {
        var event = event
        event.changes = changes
        try Self.insertAudit(CollectionOfOne(event), db)
    }

    /// Inserts `events` in order with one prepared statement: GRDB's cache finds it by hashing the
    /// whole SQL text, so the group commit's batches look it up once, not once per event. Each event
    /// is numbered next in its company's log (``AuditEvent/id``): the company's last number is read
    /// once a batch, in the write transaction, so that no other writer (the operator's commands
    /// included) can take it meanwhile.
    static func insertAudit(_ events: some Sequence<AuditEvent>, _ db: Database) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO auditEvent (companyId, number, at, actorId, action, lockId, roomId, subjectId, outcome, reason, changes)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        var next: [String: Int64] = [:]
        for event in events {
            let company = event.companyID.rawValue
            let number = try next[company] ?? lastAuditNumber(of: company, db) + 1
            next[company] = number + 1
            let changes = event.changes.isEmpty ? nil : String(decoding: try JSONEncoder().encode(event.changes), as: UTF8.self)
            try statement.execute(arguments: [
                company, number, StorageDate.text(event.at), event.actorID?.rawValue, event.action.rawValue, event.lockID?.rawValue,
                event.roomID?.rawValue, event.subjectID?.rawValue, event.outcome.rawValue, event.reason, changes,
            ])
        }
    }

    /// The number of `company`'s newest audit event, 0 before its first (one step down its index).
    private static func lastAuditNumber(of company: String, _ db: Database) throws -> Int64 {
        let statement = try db.cachedStatement(sql: "SELECT max(number) FROM auditEvent WHERE companyId = ?")
        return try Int64.fetchOne(statement, arguments: [company]) ?? 0
    }
}
