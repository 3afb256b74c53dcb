import Foundation
import GRDB
import SiteHarness
import Testing

@testable import UnlockITStore

@Suite struct PositionalRowTests {
    let directory: TemporaryDirectory
    let queue: DatabaseQueue
    let stored = Date(timeIntervalSince1970: 1_800_000_000.123)

    init() throws {
        directory = try TemporaryDirectory("unlockit-row")
        queue = try DatabaseQueue(path: "\(directory.path)/row.sqlite")
        try queue.write { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "CREATE TABLE t (key BLOB PRIMARY KEY, name TEXT, level INTEGER, flag BOOLEAN, at DATETIME, data BLOB)")
            try db.execute(
                sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", arguments: [Data([1, 2]), "Ærø ✓", 42, true, stored, Data([0, 255])])
            try db.execute(sql: "INSERT INTO t VALUES (?, NULL, NULL, NULL, NULL, NULL)", arguments: [Data([3])])
            try db.execute(sql: "INSERT INTO t VALUES (?, '', 0, 0, '2026-11-24T10:00:00', ?)", arguments: [Data(), Data()])
        }
    }

    func read<T>(_ key: [UInt8], _ body: (PositionalRow) throws -> T) throws -> T? {
        try queue.read { db in try db.cachedStatement(sql: "SELECT name, level, flag, at, data FROM t WHERE key = ?").firstRow([.blob(key)], body) }
    }

    @Test func readsEachColumnAsGRDBDoes() throws {
        let values = try read([1, 2]) { row in
            (try row.text(0), try row.integer(1), try row.bool(2), try row.date(3), try row.optionalBlob(4))
        }
        let expected = try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT name, level, flag, at, data FROM t WHERE key = ?", arguments: [Data([1, 2])])
        }
        #expect(values?.0 == "Ærø ✓" && values?.0 == expected?[0])
        #expect(values?.1 == 42 && values?.2 == true)
        #expect(values?.3 == expected?[3])
        #expect(abs(values?.3.timeIntervalSince(stored) ?? 1) < 0.001)  // stored to the millisecond
        #expect(values?.4 == [0, 255])
    }

    @Test func nullsAreNilAndRefusedWhereAValueIsRequired() throws {
        let optionals = try read([3]) { row in
            (try row.optionalText(0), try row.optionalInteger(1), try row.optionalDate(3), try row.optionalBlob(4), try row.optionalInteger(2))
        }
        #expect(optionals?.0 == nil && optionals?.1 == nil && optionals?.2 == nil && optionals?.3 == nil && optionals?.4 == nil)
        #expect(throws: PositionalRow.ColumnError.self) { try read([3]) { try $0.text(0) } }
        #expect(throws: PositionalRow.ColumnError.self) { try read([3]) { try $0.integer(1) } }
        #expect(throws: PositionalRow.ColumnError.self) { try read([3]) { try $0.bool(2) } }
        #expect(throws: PositionalRow.ColumnError.self) { try read([3]) { try $0.date(3) } }
    }

    @Test func aColumnOfAnotherStorageClassIsRefused() throws {
        #expect(throws: PositionalRow.ColumnError.self) { try read([1, 2]) { try $0.integer(0) } }
        #expect(throws: PositionalRow.ColumnError.self) { try read([1, 2]) { try $0.text(1) } }
        #expect(throws: PositionalRow.ColumnError.self) { try read([1, 2]) { try $0.optionalBlob(0) } }
        #expect(throws: PositionalRow.ColumnError.self) { try read([1, 2]) { try $0.date(0) } }  // not a date at all
        // A number is left to GRDB, which reads it as seconds since 1970.
        #expect(try read([1, 2]) { try $0.date(1) } == Date(timeIntervalSince1970: 42))
    }

    @Test func anEmptyBlobIsBoundAsOneAndAnotherDateFormatIsLeftToGRDB() throws {
        let values = try read([]) { row in (try row.text(0), try row.date(3), try row.optionalBlob(4)) }
        #expect(values?.0 == "")
        #expect(values?.1 == Date.fromDatabaseValue("2026-11-24T10:00:00".databaseValue))
        #expect(values?.2 == [])
        #expect(try read([9]) { try $0.text(0) } == nil)
    }

    /// A read must not keep its implicit transaction: the write-ahead log could then never be
    /// checkpointed to its end. A `TRUNCATE` checkpoint fails while any reader holds a snapshot.
    @Test func theStatementIsResetAfterEveryReadAndCanBeReused() throws {
        let reader = try DatabaseQueue(path: "\(directory.path)/row.sqlite")
        for round in 0..<3 {
            _ = try reader.read { db in
                try db.cachedStatement(sql: "SELECT name FROM t WHERE key = ?").firstRow([.blob([1, 2])]) { try $0.text(0) }
            }
            #expect(throws: PositionalRow.ColumnError.self) {
                try reader.read { db in try db.cachedStatement(sql: "SELECT name FROM t WHERE key = ?").firstRow([.blob([3])]) { try $0.text(0) } }
            }
            try queue.write { db in try db.execute(sql: "UPDATE t SET level = ? WHERE key = ?", arguments: [round, Data([1, 2])]) }
            let busy = try queue.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            #expect(busy == 0, "round \(round): a reader still holds the log")
        }
    }
}
