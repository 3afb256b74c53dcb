import GRDB

/// A statement on the path of every request, prepared once on each hot reader.
enum HotQuery: Int, CaseIterable {
    /// The session and its user, by the token's hash (``SQLiteStore/session(tokenHash:)``).
    case session
    /// A lock, its room and whether the user is on the room's list (``SQLiteStore/unlockContext(_:in:for:)``).
    case unlockContext

    var sql: String {
        switch self {
        case .session: SQLiteStore.sessionSQL
        case .unlockContext: SQLiteStore.unlockContextSQL
        }
    }
}

/// A read-only connection for the lookups on the path of every request (see
/// ``SQLiteStore/readStatement(_:_:)``), holding each ``HotQuery``'s prepared statement.
///
/// GRDB's statement cache finds a statement by hashing its whole SQL text, about 1,700 instructions
/// a lookup (callgrind); here it is an index into an array.
final class HotReader: @unchecked Sendable {
    // Unchecked: `prepared` is read and written only inside `connection.unsafeRead`, whose serial
    // queue runs one block at a time, and a statement is used only on the connection that prepared it.
    // When the reader goes, GRDB closes the connection with `sqlite3_close_v2`, which frees it once
    // the statements held here are finalised, whichever of the two goes first.
    private let connection: DatabaseQueue
    private var prepared: [Statement?] = Array(repeating: nil, count: HotQuery.allCases.count)

    init(connection: DatabaseQueue) {
        self.connection = connection
    }

    /// Runs `body` with `query`'s statement, on this connection's queue (waiting while it is busy).
    func run<T>(_ query: HotQuery, _ body: (Statement) throws -> T) throws -> T {
        try connection.unsafeRead { db in
            if let statement = prepared[query.rawValue] { return try body(statement) }
            // GRDB's cache prepares it as a long-lived statement and keeps it with the connection.
            let statement = try db.cachedStatement(sql: query.sql)
            prepared[query.rawValue] = statement
            return try body(statement)
        }
    }
}
