import Synchronization

/// One holder per key at a time, in arrival order, with a deadline for waiting.
///
/// The lock gateway uses it so that one lock is asked one thing at a time (a lock keeps a single
/// pending challenge) while different locks proceed in parallel.
final class KeyedSerializer<Key: Hashable & Sendable>: Sendable {
    private struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        /// A key is present while held; its array is the queue of those waiting.
        var held: [Key: [Waiter]] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())

    /// Waits for `key` until `deadline`; returns `false` if the deadline passed first.
    /// Every `true` must be paired with one ``release(_:)``.
    func acquire(_ key: Key, deadline: ContinuousClock.Instant) async -> Bool {
        let immediate = state.withLock { state -> Bool in
            guard state.held[key] == nil else { return false }
            state.held[key] = []
            return true
        }
        if immediate { return true }

        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        let timeout = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            self.abandon(key, id: id)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { continuation in
            let answer = state.withLock { state -> Bool? in
                guard var queue = state.held[key] else {
                    state.held[key] = []
                    return true
                }
                // From the deadline on, the timeout may already have looked for this waiter and
                // found nothing: queued now, it would wait for the holder instead of its deadline.
                guard ContinuousClock.now < deadline else { return false }
                queue.append(Waiter(id: id, continuation: continuation))
                state.held[key] = queue
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Hands `key` to the next waiter, or frees it.
    func release(_ key: Key) {
        let next = state.withLock { state -> Waiter? in
            guard var queue = state.held[key] else { return nil }
            guard !queue.isEmpty else {
                state.held[key] = nil
                return nil
            }
            let first = queue.removeFirst()
            state.held[key] = queue
            return first
        }
        next?.continuation.resume(returning: true)
    }

    private func abandon(_ key: Key, id: Int) {
        let waiter = state.withLock { state -> Waiter? in
            guard var queue = state.held[key], let index = queue.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = queue.remove(at: index)
            state.held[key] = queue
            return waiter
        }
        waiter?.continuation.resume(returning: false)
    }
}
