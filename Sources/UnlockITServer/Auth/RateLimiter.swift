import Synchronization

/// Attempts per key: a bucket of `perMinute` attempts for each key, refilled at `perMinute` a
/// minute, so a key may use them in a burst or spread out.
///
/// Two limits use it. Password checks per client (``ClientAddress``; sign-ins and password
/// changes): the per-account limits (``SignInLimiter``) stop guessing at one account; this stops one
/// client from keeping bcrypt's queue full so that every other sign-in is turned away, and from
/// spraying guesses across many accounts. And unlock attempts per user, whatever their outcome
/// (``UnlockController``): each attempt is a permanent audit row and, for a lock that answers, a
/// round trip through the broker, so one user's token in a loop must not fill the disk or the
/// audit log's write queue, which every company shares.
final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
        /// When a refusal of this key was last reported as the first in a minute.
        var reported: ContinuousClock.Instant?
    }

    /// An attempt turned away.
    struct Refusal: Sendable {
        /// How long until the key may try again.
        let wait: Duration
        /// No refusal of the key was reported in the last minute: a caller that records refusals
        /// records this one, not every attempt of a key that keeps trying.
        let isFirstInAMinute: Bool
    }

    private let perSecond: Double
    private let burst: Double
    private let buckets = Mutex<[Key: Bucket]>([:])
    /// Bounds memory under a spray of keys: full buckets are forgotten first (they are what a new
    /// key gets anyway), then any, down to nine tenths of it.
    private let capacity: Int

    init(perMinute: Int, capacity: Int = 100_000) {
        perSecond = Double(perMinute) / 60
        burst = Double(perMinute)
        self.capacity = capacity
    }

    /// Takes one attempt for `key`: `nil` if it may go ahead, else the refusal. A refused attempt
    /// takes nothing.
    func take(_ key: Key, now: ContinuousClock.Instant) -> Refusal? {
        buckets.withLock { buckets in
            if buckets.count >= capacity && buckets[key] == nil { evict(&buckets, now: now) }
            // In place: the key is hashed once (an unlock's user id, on every unlock).
            return spend(&buckets[key, default: Bucket(tokens: burst, updated: now)], now: now)
        }
    }

    private func spend(_ bucket: inout Bucket, now: ContinuousClock.Instant) -> Refusal? {
        bucket = refilled(bucket, now: now)
        guard bucket.tokens >= 1 else {
            let first = bucket.reported.map { $0.duration(to: now) >= .seconds(60) } ?? true
            if first { bucket.reported = now }
            return Refusal(wait: .seconds((1 - bucket.tokens) / perSecond), isFirstInAMinute: first)
        }
        bucket.tokens -= 1
        return nil
    }

    /// Forgets `key`: its next attempt finds a full bucket.
    func forget(_ key: Key) {
        _ = buckets.withLock { $0.removeValue(forKey: key) }
    }

    /// How many keys are remembered.
    var keyCount: Int { buckets.withLock { $0.count } }

    private func refilled(_ bucket: Bucket, now: ContinuousClock.Instant) -> Bucket {
        let elapsed = bucket.updated.duration(to: now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        var refilled = bucket
        refilled.tokens = min(burst, bucket.tokens + max(0, seconds) * perSecond)
        refilled.updated = max(bucket.updated, now)
        return refilled
    }

    /// Makes room (``Swift/Dictionary/makeRoom(capacity:dropping:keeping:rank:goesFirst:)``): full
    /// buckets first, then those with the most attempts left, so a key turned away is the last to be
    /// let off.
    private func evict(_ buckets: inout [Key: Bucket], now: ContinuousClock.Instant) {
        buckets.makeRoom(
            capacity: capacity, dropping: { refilled($0, now: now).tokens >= burst }, rank: { refilled($0, now: now).tokens }, goesFirst: >)
    }
}
