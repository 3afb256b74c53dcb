import Synchronization

/// At most `perMinute` log lines per key in a minute, for lines an outsider can make the server
/// write as fast as they like (a lock that connects and drops over and over writes an online and an
/// offline line each time).
///
/// A key's minute starts with its first line. The line that spends the budget says so, the rest of
/// the minute is counted, not written, and the key's next line after it gives that count.
final class LogBudget<Key: Hashable & Sendable>: Sendable {
    /// A line to write.
    struct Line: Equatable, Sendable {
        /// Lines of the key not written since the last one that was.
        let unloggedBefore: Int
        /// The last line of the key written this minute.
        let spendsTheBudget: Bool
    }

    private struct Window {
        var start: ContinuousClock.Instant
        var logged: Int
        var unlogged: Int
    }

    private let perMinute: Int
    private let windows = Mutex<[Key: Window]>([:])

    init(perMinute: Int) {
        self.perMinute = max(1, perMinute)
    }

    /// A line of `key` at `now`: what to write, or `nil` to count it and write nothing.
    func take(_ key: Key, now: ContinuousClock.Instant) -> Line? {
        windows.withLock { windows in
            var window = windows[key] ?? Window(start: now, logged: 0, unlogged: 0)
            var unloggedBefore = 0
            if window.start.duration(to: now) >= .seconds(60) {
                unloggedBefore = window.unlogged
                window = Window(start: now, logged: 0, unlogged: 0)
            }
            defer { windows[key] = window }
            guard window.logged < perMinute else {
                window.unlogged += 1
                return nil
            }
            window.logged += 1
            return Line(unloggedBefore: unloggedBefore, spendsTheBudget: window.logged == perMinute)
        }
    }

    /// Forgets `key` (a lock retired, or registered anew).
    func forget(_ key: Key) {
        _ = windows.withLock { $0.removeValue(forKey: key) }
    }
}
