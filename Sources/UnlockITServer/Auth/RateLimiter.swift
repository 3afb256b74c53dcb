import Synchronization

/// Password checks per client (``ClientAddress``; sign-ins and password changes): a bucket of `perMinute` attempts for each
/// client, refilled at `perMinute` a minute. The per-account limits (``SignInLimiter``) stop
/// guessing at one account; this stops one client from keeping bcrypt's queue full so that every
/// other sign-in is turned away, and from spraying guesses across many accounts.
final class ClientRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let perSecond: Double
    private let burst: Double
    private let buckets = Mutex<[String: Bucket]>([:])
    /// Bounds memory under a spray of addresses: full buckets are forgotten first (they are what a
    /// new client gets anyway), then any, down to nine tenths of it.
    private let capacity: Int

    init(perMinute: Int, capacity: Int = 100_000) {
        perSecond = Double(perMinute) / 60
        burst = Double(perMinute)
        self.capacity = capacity
    }

    /// Takes one attempt for `client`: `nil` if it may go ahead, else how long until it may.
    func take(_ client: String, now: ContinuousClock.Instant) -> Duration? {
        buckets.withLock { buckets in
            var bucket = buckets[client].map { refilled($0, now: now) } ?? Bucket(tokens: burst, updated: now)
            guard bucket.tokens >= 1 else {
                buckets[client] = bucket
                return .seconds((1 - bucket.tokens) / perSecond)
            }
            bucket.tokens -= 1
            if buckets[client] == nil && buckets.count >= capacity { evict(&buckets, now: now) }
            buckets[client] = bucket
            return nil
        }
    }

    /// How many clients are remembered.
    var clientCount: Int { buckets.withLock { $0.count } }

    private func refilled(_ bucket: Bucket, now: ContinuousClock.Instant) -> Bucket {
        let elapsed = bucket.updated.duration(to: now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        return Bucket(tokens: min(burst, bucket.tokens + max(0, seconds) * perSecond), updated: max(bucket.updated, now))
    }

    /// Makes room for a tenth of the capacity at once, so that a sweep over every bucket happens at
    /// most once per that many new clients (a spray of addresses cannot make each attempt cost one).
    private func evict(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant) {
        buckets = buckets.filter { refilled($0.value, now: now).tokens < burst }
        let target = capacity - max(1, capacity / 10)
        if buckets.count > target {
            for key in Array(buckets.keys.prefix(buckets.count - target)) { buckets[key] = nil }
        }
    }
}
