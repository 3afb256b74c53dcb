import Synchronization

/// At most `limit` holders at a time and up to `maxWaiting` more waiting: a bounded queue, so a
/// storm cannot pile up work (and memory, and latency) without end. What does not fit is turned
/// away with ``Saturated``: at once, or after a wait when a newcomer takes its place.
///
/// The queue is shared fairly between networks (``ClientAddress/network(of:)``), so that one network
/// cannot keep everyone else out by keeping it full:
/// - A free slot goes to the networks that wait in turn (round robin), each network's own requests
///   in arrival order.
/// - When the queue is full, a newcomer takes the place of the newest waiter of the network that
///   holds the most places among those that hold at least two more than the newcomer's (of two
///   such, the one whose waiter came last); that waiter is turned away instead. Otherwise the
///   newcomer is. So networks that wait with as many requests as each other do not push each other
///   out, and a network that has filled the queue gives way to each network that asks, down to its
///   share. With a queue of one place or none, no network can hold two more than another: the
///   queue is then first come, first served.
/// - A `queueing` caller waits in line without taking one of the `maxWaiting` places: it is never
///   turned away, and however many wait so, they keep no one else out of the queue. They take their
///   network's turns like its other waiters.
final class AsyncLimiter: Sendable {
    /// The queue was full: the caller should answer "busy" and let the client retry later.
    struct Saturated: Error {}

    private struct Waiter {
        let arrival: UInt64
        let continuation: CheckedContinuation<Bool, Never>
        /// False for a caller that waits even when the queue is full (`queueing`): it holds no place
        /// and is never turned away.
        let evictable: Bool
    }

    private struct State {
        var available: Int
        var waiting: [String: [Waiter]] = [:]
        /// The networks with a waiter, in the order they get the next free slot.
        var turns: [String] = []
        var count = 0
        /// The waiters that hold one of the queue's places: all but the `queueing` ones.
        var places = 0
        var arrivals: UInt64 = 0

        /// The newest waiter that may be turned away for a newcomer of `network`, taken out of the queue.
        mutating func evictForNewcomer(of network: String) -> Waiter? {
            let mine = Self.places(of: waiting[network] ?? [])
            var victim: (network: String, index: Int, places: Int, arrival: UInt64)?
            for (other, waiters) in waiting where other != network {
                let held = Self.places(of: waiters)
                guard held >= mine + 2, let index = waiters.lastIndex(where: \.evictable) else { continue }
                let candidate = (other, index, held, waiters[index].arrival)
                if let best = victim, (best.places, best.arrival) >= (candidate.2, candidate.3) { continue }
                victim = candidate
            }
            guard let victim else { return nil }
            // It held at least two places: it keeps a waiter, and its turn.
            count -= 1
            places -= 1
            return waiting[victim.network]!.remove(at: victim.index)
        }

        private static func places(of waiters: [Waiter]) -> Int { waiters.count(where: \.evictable) }

        mutating func append(_ continuation: CheckedContinuation<Bool, Never>, of network: String, evictable: Bool) {
            arrivals += 1
            if waiting[network] == nil { turns.append(network) }
            waiting[network, default: []].append(Waiter(arrival: arrivals, continuation: continuation, evictable: evictable))
            count += 1
            if evictable { places += 1 }
        }

        /// The next waiter to get a free slot, taken out of the queue.
        mutating func next() -> Waiter? {
            guard !turns.isEmpty else { return nil }
            let network = turns.removeFirst()
            let waiter = waiting[network]!.removeFirst()
            if waiting[network]!.isEmpty {
                waiting[network] = nil
            } else {
                turns.append(network)
            }
            count -= 1
            if waiter.evictable { places -= 1 }
            return waiter
        }
    }

    private let state: Mutex<State>
    private let maxWaiting: Int

    init(limit: Int, maxWaiting: Int) {
        precondition(limit > 0 && maxWaiting >= 0)
        state = Mutex(State(available: limit))
        self.maxWaiting = maxWaiting
    }

    /// How many callers wait for a slot.
    var waitingCount: Int { state.withLock { $0.count } }

    /// How many of the queue's places are taken: the waiters but the `queueing` ones.
    var placesTaken: Int { state.withLock { $0.places } }

    /// - Parameters:
    ///   - network: whose request this is, for the fair share of the queue.
    ///   - queueing: wait in line even when the queue is full, without taking one of its places. For
    ///     work that asks for one slot at a time and must not fail halfway because of others' bursts
    ///     (an import's passwords): each such caller adds at most one waiter, is never turned away
    ///     for a newcomer, and keeps no newcomer out.
    func run<T: Sendable>(network: String, queueing: Bool = false, _ body: () async throws -> T) async throws -> T {
        try await acquire(network: network, queueing: queueing)
        defer { release() }
        return try await body()
    }

    private func acquire(network: String, queueing: Bool) async throws {
        let immediate = state.withLock { state -> Bool in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
        if immediate { return }
        let admitted = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let (answer, evicted) = state.withLock { state -> (Bool?, Waiter?) in
                if state.available > 0 {
                    state.available -= 1
                    return (true, nil)
                }
                if queueing || state.places < maxWaiting {
                    state.append(continuation, of: network, evictable: !queueing)
                    return (nil, nil)
                }
                guard let evicted = state.evictForNewcomer(of: network) else { return (false, nil) }
                state.append(continuation, of: network, evictable: true)
                return (nil, evicted)
            }
            evicted?.continuation.resume(returning: false)
            if let answer { continuation.resume(returning: answer) }
        }
        guard admitted else { throw Saturated() }
    }

    private func release() {
        let next = state.withLock { state -> Waiter? in
            guard let next = state.next() else {
                state.available += 1
                return nil
            }
            return next
        }
        next?.continuation.resume(returning: true)
    }
}
