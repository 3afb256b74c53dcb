import Foundation
import Synchronization
import UnlockITCore

/// Which locks are online, as their retained status messages and last wills say, and when each was
/// last heard from. Changes are collected here and written to the store in batches.
final class PresenceTracker: Sendable {
    private struct Entry {
        var online: Bool
        var lastSeen: Date
        var firmware: String?
        var persistedAt: Date?
        var dirty: Bool
    }

    /// How stale a persisted "last seen" may get while the lock keeps talking.
    static let lastSeenPersistInterval: TimeInterval = 30

    private struct State {
        var entries: [LockID: Entry] = [:]
        /// How many entries are online, kept as they change: a lock that flips its status as fast
        /// as it can must not cost a count over every lock each time.
        var online = 0

        /// The entry of `lock` changed by `change`, the online count with it.
        mutating func update<T>(_ lock: LockID, _ change: (inout Entry?) -> T) -> T {
            var entry = entries[lock]
            let wasOnline = entry?.online ?? false
            let result = change(&entry)
            entries[lock] = entry
            online += (entry?.online ?? false ? 1 : 0) - (wasOnline ? 1 : 0)
            return result
        }
    }

    private let state = Mutex(State())

    /// Applies a status message; returns whether the online flag changed.
    @discardableResult
    func status(_ lock: LockID, online: Bool, firmware: String?, now: Date) -> Bool {
        state.withLock { state in
            state.update(lock) { known in
                var entry = known ?? Entry(online: !online, lastSeen: now, firmware: nil, persistedAt: nil, dirty: true)
                let changed = entry.online != online
                entry.online = online
                entry.lastSeen = now
                if let firmware { entry.firmware = firmware }
                if changed { entry.dirty = true }
                known = entry
                return changed
            }
        }
    }

    /// The broker disconnected the lock without its last will: an online lock is offline from now,
    /// having been there until now. A lock not known to be online keeps what is known of it (none
    /// is made up for a lock never heard from). Returns whether the online flag changed.
    func disconnected(_ lock: LockID, now: Date) -> Bool {
        state.withLock { state in
            state.update(lock) { known in
                guard var entry = known, entry.online else { return false }
                entry.online = false
                entry.lastSeen = now
                entry.dirty = true
                known = entry
                return true
            }
        }
    }

    /// Forgets all that is known of the lock, a change not yet written included: a retired lock's id
    /// registered again starts as a new lock does.
    func forget(_ lock: LockID) {
        state.withLock { $0.update(lock) { $0 = nil } }
    }

    /// Any message from the lock proves it is there.
    func seen(_ lock: LockID, now: Date) {
        // In place: one lookup for every message a lock sends, not a read and a write.
        state.withLock { $0.entries[lock]?.lastSeen = now }
    }

    func isOnline(_ lock: LockID) -> Bool { state.withLock { $0.entries[lock]?.online ?? false } }

    func presence(_ lock: LockID) -> LockPresence? {
        state.withLock { state in
            state.entries[lock].map { LockPresence(lock: lock, online: $0.online, lastSeen: $0.lastSeen, firmwareVersion: $0.firmware) }
        }
    }

    var onlineCount: Int { state.withLock { $0.online } }

    /// After the server's own connection to the broker was lost, nothing is known until the retained
    /// statuses arrive again.
    func markAllOffline() {
        state.withLock { state in
            for (lock, var entry) in state.entries where entry.online {
                entry.online = false
                entry.dirty = true
                state.entries[lock] = entry
            }
            state.online = 0
        }
    }

    /// What should be written to the store now: every change of the online flag, and last-seen times
    /// that moved on since they were last written more than ``lastSeenPersistInterval`` ago.
    func takeChanges(now: Date) -> [LockPresence] {
        state.withLock { state in
            var changes: [LockPresence] = []
            for (lock, var entry) in state.entries {
                let staleSeen = entry.persistedAt.map { entry.lastSeen > $0 && now.timeIntervalSince($0) >= Self.lastSeenPersistInterval } ?? true
                guard entry.dirty || staleSeen else { continue }
                changes.append(LockPresence(lock: lock, online: entry.online, lastSeen: entry.lastSeen, firmwareVersion: entry.firmware))
                entry.dirty = false
                entry.persistedAt = now
                state.entries[lock] = entry
            }
            return changes
        }
    }
}
