import Foundation
import GRDB
import GRDBSQLite

/// The row a read-only statement is on, read by column position through SQLite's C API.
///
/// For the two reads of every unlock (the session, the unlock context). GRDB's `Row` cursor
/// lower-cases every column name into a dictionary each time its statement runs, boxes each
/// argument, and decodes dates through Foundation's calendar: under `wrk -c64` that was ≈ 5 % of
/// the server's CPU, more than the two queries. Here a column is read where it stands, with its
/// storage class checked; a date in GRDB's storage format is parsed by ``StorageDate``, and
/// anything else is left to GRDB's own decoding.
struct PositionalRow {
    private let statement: SQLiteStatement

    /// A column did not hold what the query promises (a schema violation).
    struct ColumnError: Error, CustomStringConvertible {
        let column: Int32
        let expected: String
        let sql: String
        var description: String { "column \(column) is not \(expected) in: \(sql)" }
    }

    /// A value bound to a statement's next `?`.
    enum Argument {
        case text(String)
        case blob([UInt8])
    }

    fileprivate init(statement: SQLiteStatement) {
        self.statement = statement
    }

    /// The statement's text, for an error only: GRDB's `Statement.sql` trims a copy on every call.
    private var sql: String {
        sqlite3_sql(statement).map { String(cString: $0) } ?? "?"
    }

    /// `value`, or the error for a NULL where the query promises one.
    private func required<T>(_ value: T?, _ column: Int32, _ expected: String) throws -> T {
        guard let value else { throw ColumnError(column: column, expected: expected, sql: sql) }
        return value
    }

    func text(_ column: Int32) throws -> String {
        try required(optionalText(column), column, "text")
    }

    func optionalText(_ column: Int32) throws -> String? {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_NULL: return nil
        case SQLITE_TEXT:
            // `sqlite3_column_bytes` after `sqlite3_column_text`, as SQLite's documentation asks.
            let start = sqlite3_column_text(statement, column)
            let count = Int(sqlite3_column_bytes(statement, column))
            guard let start else { return "" }
            return String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
        default: throw ColumnError(column: column, expected: "text", sql: sql)
        }
    }

    func integer(_ column: Int32) throws -> Int {
        try required(optionalInteger(column), column, "an integer")
    }

    func optionalInteger(_ column: Int32) throws -> Int? {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_NULL: return nil
        case SQLITE_INTEGER: return Int(sqlite3_column_int64(statement, column))
        default: throw ColumnError(column: column, expected: "an integer", sql: sql)
        }
    }

    func bool(_ column: Int32) throws -> Bool {
        try integer(column) != 0
    }

    func optionalBlob(_ column: Int32) throws -> [UInt8]? {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_NULL: return nil
        case SQLITE_BLOB:
            let start = sqlite3_column_blob(statement, column)
            let count = Int(sqlite3_column_bytes(statement, column))
            guard let start else { return [] }
            return Array(UnsafeRawBufferPointer(start: start, count: count))
        default: throw ColumnError(column: column, expected: "a blob", sql: sql)
        }
    }

    func date(_ column: Int32) throws -> Date {
        try required(optionalDate(column), column, "a date")
    }

    func optionalDate(_ column: Int32) throws -> Date? {
        let type = sqlite3_column_type(statement, column)
        if type == SQLITE_NULL { return nil }
        if type == SQLITE_TEXT, let start = sqlite3_column_text(statement, column) {
            let count = Int(sqlite3_column_bytes(statement, column))
            if let date = StorageDate.date(UnsafeBufferPointer(start: start, count: count)) { return date }
        }
        guard let date = Date.fromDatabaseValue(DatabaseValue(sqliteStatement: statement, index: column)) else {
            throw ColumnError(column: column, expected: "a date", sql: sql)
        }
        return date
    }
}

extension Statement {
    /// Runs this read with `arguments` bound in order and hands its first row to `body`, or
    /// returns nil if there is none. The statement is reset before this returns, which also ends
    /// SQLite's implicit read transaction: a reader must not hold back the write-ahead log.
    func firstRow<T>(_ arguments: [PositionalRow.Argument], _ body: (PositionalRow) throws -> T) throws -> T? {
        let statement = sqliteStatement
        precondition(Int(sqlite3_bind_parameter_count(statement)) == arguments.count, "wrong number of arguments for a statement")
        defer { sqlite3_reset(statement) }
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch argument {
            case .text(let text):
                code = text.withCString { sqlite3_bind_text(statement, index, $0, Int32(text.utf8.count), Self.transient) }
            case .blob(let bytes) where bytes.isEmpty:
                code = sqlite3_bind_zeroblob(statement, index, 0)  // a nil pointer would bind NULL
            case .blob(let bytes):
                code = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), Self.transient) }
            }
            guard code == SQLITE_OK else { throw failure(code) }
        }
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return try body(PositionalRow(statement: statement))
        case SQLITE_DONE: return nil
        case let code: throw failure(code)
        }
    }

    /// SQLite copies the bound bytes: they live only for the binding call.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    private func failure(_ code: Int32) -> DatabaseError {
        let message = sqlite3_db_handle(sqliteStatement).flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
    }
}
