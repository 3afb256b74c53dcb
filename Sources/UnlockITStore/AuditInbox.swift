import Foundation
import GRDB
import Synchronization
import UnlockITCore

/// Where new audit events land: an unindexed table whose rows move into the indexed log
/// (`auditEvent`) in bulk, a few times a second.
///
/// The log has eight indexes so that every filter of the API is a range scan. Written one small
/// transaction at a time, two of them (by lock, by room) get each event on a different page, and a
/// commit writes every page it touched to the write-ahead log whole: 11–14 KB per unlock. The inbox
/// is one B-tree appended at its end; a move writes each index page once for all the events that
/// landed on it since the last move.
///
/// How often: the upkeep (``SQLiteStore/maintain()``, every 250 ms) moves events once they have
/// waited ``moveInterval``, 250 ms by default. Moves once a second wrote fewer bytes, but each was a
/// burst of index work (≈ 9 µs per event: 60 ms of CPU at 7,000 unlocks/s) that showed in the
/// latency of the unlocks around it.
///
/// The only way out of the inbox is into the log: a trigger appends every deleted row to
/// `auditEvent`, so a move is one `DELETE` (SQLite deletes in rowid order, which is the order the
/// events came in), and no one with the file can drop an event on its way. Readers of the log move
/// the inbox first (``SQLiteStore/auditEvents(_:)``); a crash leaves the inbox as committed, and the
/// next start moves it.
final class AuditInbox: Sendable {
    /// How long an event may wait in the inbox before ``SQLiteStore/maintain()`` moves it.
    let moveInterval: Duration
    /// When the oldest event not yet moved came in; `nil` when the inbox is (as far as we know) empty.
    private let oldest = Mutex<ContinuousClock.Instant?>(nil)

    init(moveInterval: Duration) {
        self.moveInterval = moveInterval
    }

    /// Adds `event` in `db`'s transaction.
    func insert(_ event: AuditEvent, _ db: Database) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO auditInbox (companyId, at, actorId, action, lockId, roomId, subjectId, outcome, reason)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        try statement.execute(arguments: [
            event.companyID.rawValue, StorageDate.text(event.at), event.actorID?.rawValue, event.action.rawValue, event.lockID?.rawValue,
            event.roomID?.rawValue, event.subjectID?.rawValue, event.outcome.rawValue, event.reason,
        ])
        oldest.withLock { if $0 == nil { $0 = .now } }
    }

    /// Whether an event has waited ``moveInterval``.
    func isDue(at now: ContinuousClock.Instant) -> Bool {
        oldest.withLock { $0.map { $0.duration(to: now) >= moveInterval } ?? false }
    }

    /// Moves every event in the inbox into the log, in the order they came in, in one transaction.
    func move(in pool: DatabasePool) throws {
        let taken = oldest.withLock { $0.take() }
        do {
            try pool.write { db in try db.execute(sql: "DELETE FROM auditInbox") }
        } catch {
            // Still due: the events stay in the inbox (readers move it first, whatever this says).
            oldest.withLock { current in current = [current, taken].compactMap { $0 }.min() }
            throw error
        }
    }
}
