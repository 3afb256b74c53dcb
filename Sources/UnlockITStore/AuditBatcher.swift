import Foundation
import Synchronization
import UnlockITCore

/// Group commit for the audit log: appends that arrive while a commit is running are written
/// together in the next one, each caller still waiting for the commit that holds its event.
///
/// The first caller to find no commit running leads: it commits on its own thread (no hop at all
/// when the server is quiet), then keeps committing what accumulated meanwhile, for a few rounds,
/// before handing any rest to a background queue. Under load one transaction carries many events:
/// the log's table and eight indexes are written once per batch instead of once per event.
final class AuditBatcher: Sendable {
    private struct State {
        var pending: [(event: AuditEvent, continuation: CheckedContinuation<Void, any Error>)] = []
        var committing = false
    }

    private let state = Mutex(State())
    private let commit: @Sendable ([AuditEvent]) throws -> Void
    private let background = DispatchQueue(label: "unlockit.audit")
    /// Rounds a leading caller commits before it hands the rest to the background queue.
    private let roundsPerLeader = 2

    init(commit: @escaping @Sendable ([AuditEvent]) throws -> Void) {
        self.commit = commit
    }

    func append(_ event: AuditEvent) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let lead = state.withLock { state -> Bool in
                state.pending.append((event, continuation))
                guard !state.committing else { return false }
                state.committing = true
                return true
            }
            if lead { drain(rounds: roundsPerLeader) }
        }
    }

    private func drain(rounds: Int) {
        for _ in 0..<rounds {
            let batch = state.withLock { state -> [(event: AuditEvent, continuation: CheckedContinuation<Void, any Error>)] in
                defer { state.pending.removeAll(keepingCapacity: true) }
                if state.pending.isEmpty { state.committing = false }
                return state.pending
            }
            guard !batch.isEmpty else { return }
            do {
                try commit(batch.map(\.event))
                for entry in batch { entry.continuation.resume() }
            } catch {
                for entry in batch { entry.continuation.resume(throwing: error) }
            }
        }
        // Still leading, with more waiting: the rest is committed off this caller's thread.
        background.async { [self] in drain(rounds: .max) }
    }
}
