import Foundation
import Synchronization
import UnlockITCore

/// Denied unlock attempts per user: once a user has had `perMinute` denials within a minute, their
/// unlocks are turned away (429) before the access rule runs, until the oldest of those denials is a
/// minute old.
///
/// Someone who may open a door is rarely denied. A token that probes lock ids, or a disabled
/// user's token in a loop, would otherwise cost a store read and an audit event per attempt, and
/// the audit log's write queue is shared by every company: when it is full no unlock starts
/// anywhere. Granted unlocks never count (each waits for its lock anyway); nor do the lock's or the
/// broker's failures, which are not the user's doing.
final class DeniedUnlockLimiter: Sendable {
    private struct Record {
        /// The denials of the last minute, oldest first; at most `perMinute` of them.
        var recent: [Date] = []
        /// When the user last reached the limit.
        var limited: Date?
    }

    private let perMinute: Int
    private let records = Mutex<[UserID: Record]>([:])
    /// Bounds memory when very many users are denied at once: users whose denials have all expired
    /// go first, then others down to nine tenths of it, paused users last and otherwise the longest
    /// quiet first.
    private let capacity: Int

    init(perMinute: Int, capacity: Int = 100_000) {
        self.perMinute = perMinute
        self.capacity = capacity
    }

    /// How many users are remembered.
    var userCount: Int { records.withLock { $0.count } }

    /// `nil` when `user` may try an unlock now; otherwise how long until they may.
    func wait(for user: UserID, now: Date) -> Duration? {
        records.withLock { records in
            guard let record = records[user], let free = pausedUntil(record), free > now else { return nil }
            return .milliseconds(Int64((free.timeIntervalSince(now) * 1000).rounded(.up)))
        }
    }

    /// Counts a denial of `user`. Returns true when it reaches the limit for the first time in a
    /// minute: the caller records that once, not each attempt turned away after it.
    func denied(_ user: UserID, now: Date) -> Bool {
        records.withLock { records in
            if records[user] == nil && records.count >= capacity { evict(&records, now: now) }
            var record = records[user] ?? Record()
            defer { records[user] = record }
            record.recent.removeAll { now.timeIntervalSince($0) >= 60 }
            record.recent.append(now)
            // Only the newest `perMinute` decide when the user may try again.
            if record.recent.count > perMinute { record.recent.removeFirst(record.recent.count - perMinute) }
            guard record.recent.count == perMinute, record.limited.map({ now.timeIntervalSince($0) >= 60 }) ?? true else { return false }
            record.limited = now
            return true
        }
    }

    /// When a user with `perMinute` denials may try again: a minute after the oldest of them.
    private func pausedUntil(_ record: Record) -> Date? {
        guard record.recent.count >= perMinute else { return nil }
        return record.recent[record.recent.count - perMinute].addingTimeInterval(60)
    }

    /// Makes room (``Swift/Dictionary/makeRoom(capacity:dropping:keeping:rank:goesFirst:)``): users with
    /// no denial in the last minute first, then paused users last and otherwise the longest quiet first.
    private func evict(_ records: inout [UserID: Record], now: Date) {
        func order(_ record: Record) -> (Int, Date) {
            let paused = pausedUntil(record).map { $0 > now } ?? false
            return (paused ? 1 : 0, record.recent.last ?? .distantPast)
        }
        records.makeRoom(
            capacity: capacity, dropping: { $0.recent.last.map { now.timeIntervalSince($0) >= 60 } ?? true }, rank: order, goesFirst: <)
    }
}
