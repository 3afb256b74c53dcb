import Foundation
import Synchronization
import UnlockITCore

/// The audit log's write queue: events are committed in the order they were handed in, many to a
/// transaction, on a serial queue of their own.
///
/// Two ways in:
/// - ``append(_:)`` waits for the commit that holds its event and reports its failure (admin
///   changes, sign-ins);
/// - ``enqueue(_:)`` returns at once (unlocks: the lock has already answered, and the person at the
///   door must not wait for the disk). A failed commit of such events is retried until it succeeds;
///   they are never dropped while the process runs.
///
/// Queued events wait up to ``linger`` for company, so that a transaction's fixed cost (its write-ahead
/// log frames for the audit table's nine B-trees, its locks) is shared: one unlock at a time would
/// otherwise pay a whole commit each. An awaited append, a flush or a full batch ends the wait at once.
///
/// ``flush()`` waits until every event handed in before it is committed: audit queries call it
/// first, so the log a reader sees holds every event whose request has been answered; the server
/// calls it when it shuts down. ``hasRoom`` says whether the queue is below its bound: the unlock
/// path asks before it opens a door, so a failing or far-behind disk stops unlocks (503) instead of
/// growing the queue without limit.
final class AuditBatcher: Sendable {
    private struct Entry {
        let event: AuditEvent
        /// Set for ``append(_:)``: resumed by the commit that holds the event.
        let continuation: CheckedContinuation<Void, any Error>?
    }

    private struct Flush {
        /// Resumed once this many events have settled.
        let upTo: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    /// Which drain a caller must start, if any. A lingering drain carries a token: it runs only if
    /// nothing has superseded it by the time it fires.
    private enum Start {
        case none, now, afterLinger(UInt64)
    }

    private struct State {
        /// Handed in, not yet settled, oldest first.
        var queue: [Entry] = []
        /// Events settled so far: committed, or dropped with their failure reported to their caller.
        /// With the queue's length it gives how many were ever handed in.
        var settled: UInt64 = 0
        var handedIn: UInt64 { settled + UInt64(queue.count) }
        var flushes: [Flush] = []
        /// Whether a drain is running or scheduled on `background`: exactly one is in charge of the
        /// queue while it is not empty.
        var draining = false
        /// The token of the drain in charge when it is one waiting out ``linger``; `nil` otherwise.
        var lingeringDrain: UInt64?
        var lastToken: UInt64 = 0

        /// Notes that something was handed in (or a flush asked for) and says which drain to start:
        /// none while one is in charge, unless an urgent caller finds it lingering (then an immediate
        /// drain takes charge and the lingering one will find itself superseded).
        mutating func schedule(urgent: Bool) -> Start {
            if draining {
                guard urgent, lingeringDrain != nil else { return .none }
                lingeringDrain = nil
                return .now
            }
            draining = true
            return urgent ? .now : lingerAgain()
        }

        mutating func lingerAgain() -> Start {
            lastToken += 1
            lingeringDrain = lastToken
            return .afterLinger(lastToken)
        }

        /// Whether what is queued must be committed now rather than after ``linger``.
        func isUrgent(batchLimit: Int) -> Bool {
            queue.count >= batchLimit || !flushes.isEmpty || queue.contains { $0.continuation != nil }
        }
    }

    private let state = Mutex(State())
    private let commit: @Sendable ([AuditEvent]) throws -> Void
    private let background = DispatchQueue(label: "unlockit.audit")
    /// Above this many waiting events ``hasRoom`` is false.
    let capacity: Int
    /// Events per transaction at most, so that one commit never holds the writer for long.
    private let batchLimit = 1000
    private let retryDelay: DispatchTimeInterval
    /// How long queued events wait for others to share their transaction.
    let linger: DispatchTimeInterval
    /// Told of every failed commit (the server logs it).
    private let onFailure: @Sendable (any Error) -> Void

    init(
        capacity: Int = 10_000, retryDelay: DispatchTimeInterval = .milliseconds(500), linger: DispatchTimeInterval = .milliseconds(10),
        onFailure: @escaping @Sendable (any Error) -> Void = { _ in }, commit: @escaping @Sendable ([AuditEvent]) throws -> Void
    ) {
        self.capacity = capacity
        self.retryDelay = retryDelay
        self.linger = linger
        self.onFailure = onFailure
        self.commit = commit
    }

    /// Whether fewer than ``capacity`` events are waiting for their commit.
    var hasRoom: Bool { state.withLock { $0.queue.count < capacity } }

    /// Hands `event` in and waits for the commit that holds it.
    func append(_ event: AuditEvent) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            handIn(Entry(event: event, continuation: continuation))
        }
    }

    /// Hands `event` in and returns at once; it is committed within about ``linger``, in order.
    func enqueue(_ event: AuditEvent) {
        handIn(Entry(event: event, continuation: nil))
    }

    /// Waits until every event handed in before this call is committed; throws if the commit that
    /// should hold them fails (they stay queued and are retried).
    func flush() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let start = state.withLock { state -> Start? in
                guard !state.queue.isEmpty else { return nil }
                state.flushes.append(Flush(upTo: state.handedIn, continuation: continuation))
                return state.schedule(urgent: true)
            }
            switch start {
            case nil: continuation.resume()
            case let start?: begin(start)
            }
        }
    }

    private func handIn(_ entry: Entry) {
        let start = state.withLock { state -> Start in
            state.queue.append(entry)
            return state.schedule(urgent: entry.continuation != nil || state.queue.count >= batchLimit)
        }
        begin(start)
    }

    private func begin(_ start: Start) {
        switch start {
        case .none: break
        case .now: background.async { [self] in drain() }
        case .afterLinger(let token): background.asyncAfter(deadline: .now() + linger) { [self] in drain(lingered: token) }
        }
    }

    /// Runs on `background`: commits what is queued, a batch at a time, until the queue is empty or
    /// holds only events that may wait out ``linger`` for more.
    /// `lingered`: the token of a lingering drain, which does nothing if it was superseded.
    private func drain(lingered: UInt64? = nil) {
        var token = lingered
        while true {
            let batch = state.withLock { state -> ArraySlice<Entry>? in
                if let token {
                    guard state.lingeringDrain == token else { return nil }
                    state.lingeringDrain = nil
                }
                if state.queue.isEmpty { state.draining = false }
                return state.queue.prefix(batchLimit)
            }
            token = nil
            guard let batch, !batch.isEmpty else { return }
            do {
                try commit(batch.map(\.event))
            } catch {
                failed(batch, error)
                return
            }
            let (waiting, next) = state.withLock { state -> ([CheckedContinuation<Void, any Error>], Start) in
                state.queue.removeFirst(batch.count)
                state.settled += UInt64(batch.count)
                let settled = state.settled
                let ready = state.flushes.filter { $0.upTo <= settled }.map(\.continuation)
                state.flushes.removeAll { $0.upTo <= settled }
                if state.queue.isEmpty {
                    state.draining = false
                    return (ready, .none)
                }
                return (ready, state.isUrgent(batchLimit: batchLimit) ? .now : state.lingerAgain())
            }
            for entry in batch { entry.continuation?.resume() }
            for continuation in waiting { continuation.resume() }
            if case .now = next { continue }
            begin(next)
            return
        }
    }

    /// A commit failed: the callers of ``append(_:)`` in the batch get the error and their events
    /// leave the queue (as a failed write would); queued events stay at its head and are retried
    /// after a pause; flushes waiting on them get the error.
    private func failed(_ batch: ArraySlice<Entry>, _ error: any Error) {
        let flushes = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            let dropped = batch.filter { $0.continuation != nil }.count
            state.queue.removeFirst(batch.count)
            state.queue.insert(contentsOf: batch.filter { $0.continuation == nil }, at: 0)
            // A flush waits only for events that may still be written.
            state.settled += UInt64(dropped)
            defer { state.flushes.removeAll() }
            return state.flushes.map(\.continuation)
        }
        onFailure(error)
        for entry in batch { entry.continuation?.resume(throwing: error) }
        for continuation in flushes { continuation.resume(throwing: error) }
        // The retry is the scheduled drain (not a lingering one): urgent callers wait for it.
        background.asyncAfter(deadline: .now() + retryDelay) { [self] in drain() }
    }
}
