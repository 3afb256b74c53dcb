import Synchronization

/// Requests waiting for their answers, matched by a key the answer carries (a sequence number, a
/// `req`). The waiter is registered before the request is sent, so an answer cannot overtake it;
/// a failed send fails the wait rather than leaving it hanging.
final class PendingReplies<Key: Hashable & Sendable>: Sendable {
    private let waiters = Mutex<[Key: CheckedContinuation<Void, any Error>]>([:])

    func wait(_ key: Key, _ send: () throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            waiters.withLock { $0[key] = continuation }
            do { try send() } catch { waiters.withLock { $0.removeValue(forKey: key) }?.resume(throwing: error) }
        }
    }

    func answer(_ key: Key) { waiters.withLock { $0.removeValue(forKey: key) }?.resume() }
}
