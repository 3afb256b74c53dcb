import Synchronization

/// At most `limit` holders at a time; up to `maxWaiting` more wait in arrival order, and anyone
/// beyond that is turned away at once with ``Saturated``: a bounded queue, so a storm cannot pile
/// up work (and memory, and latency) without end.
final class AsyncLimiter: Sendable {
    /// The queue was full: the caller should answer "busy" and let the client retry later.
    struct Saturated: Error {}

    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Bool, Never>] = []
    }

    private let state: Mutex<State>
    private let maxWaiting: Int

    init(limit: Int, maxWaiting: Int) {
        precondition(limit > 0 && maxWaiting >= 0)
        state = Mutex(State(available: limit))
        self.maxWaiting = maxWaiting
    }

    /// - Parameter queueing: wait in line even when the queue is full. For work that asks for one
    ///   slot at a time and must not fail halfway because of others' bursts (an import's passwords):
    ///   each such caller adds at most one to the queue.
    func run<T: Sendable>(queueing: Bool = false, _ body: () async throws -> T) async throws -> T {
        try await acquire(queueing: queueing)
        defer { release() }
        return try await body()
    }

    private func acquire(queueing: Bool) async throws {
        let immediate = state.withLock { state -> Bool in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
        if immediate { return }
        let admitted = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let answer = state.withLock { state -> Bool? in
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                guard queueing || state.waiters.count < maxWaiting else { return false }
                state.waiters.append(continuation)
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
        guard admitted else { throw Saturated() }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if state.waiters.isEmpty {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume(returning: true)
    }
}
