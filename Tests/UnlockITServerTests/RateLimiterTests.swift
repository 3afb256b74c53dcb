import Testing

@testable import UnlockITServer

@Suite struct RateLimiterTests {
    let t0 = ContinuousClock.now

    @Test func aClientGetsItsBurstThenWaitsForTheRefill() throws {
        let limiter = RateLimiter<String>(perMinute: 6)  // one attempt every 10 s
        for _ in 0..<6 { #expect(limiter.take("198.51.100.7", now: t0) == nil) }
        let wait = try #require(limiter.take("198.51.100.7", now: t0)).wait
        #expect(wait > .seconds(9.9) && wait <= .seconds(10), "\(wait)")
        // Another client is not affected.
        #expect(limiter.take("198.51.100.8", now: t0) == nil)
        // Refused attempts take nothing: after 10 s exactly one more goes ahead.
        #expect(limiter.take("198.51.100.7", now: t0 + .seconds(5)) != nil)
        #expect(limiter.take("198.51.100.7", now: t0 + .seconds(10)) == nil)
        #expect(limiter.take("198.51.100.7", now: t0 + .seconds(10)) != nil)
        // A minute later the whole burst is back, and no more than that.
        for _ in 0..<6 { #expect(limiter.take("198.51.100.7", now: t0 + .seconds(600)) == nil) }
        #expect(limiter.take("198.51.100.7", now: t0 + .seconds(600)) != nil)
    }

    @Test func memoryIsBoundedWithoutFreeingALimitedClient() {
        let limiter = RateLimiter<String>(perMinute: 2, capacity: 3)  // one attempt every 30 s
        #expect(limiter.take("limited", now: t0) == nil)
        #expect(limiter.take("limited", now: t0) == nil)
        #expect(limiter.take("a", now: t0) == nil)
        #expect(limiter.take("b", now: t0) == nil)
        // Full: a new client makes room by forgetting the buckets that have refilled ("a", "b"),
        // not the limited one, which has earned one attempt in 40 s and not two.
        #expect(limiter.take("c", now: t0 + .seconds(40)) == nil)
        #expect(limiter.take("limited", now: t0 + .seconds(40)) == nil)
        #expect(limiter.take("limited", now: t0 + .seconds(40)) != nil)
    }

    @Test func withNoBucketFullTheFullestAreForgottenNotALimitedClient() {
        let limiter = RateLimiter<String>(perMinute: 2, capacity: 3)  // one attempt every 30 s
        #expect(limiter.take("limited", now: t0) == nil)
        #expect(limiter.take("limited", now: t0) == nil)
        #expect(limiter.take("a", now: t0) == nil)
        #expect(limiter.take("b", now: t0) == nil)
        // Full, and no bucket has refilled: one of those with an attempt left makes room.
        #expect(limiter.take("c", now: t0) == nil)
        #expect(limiter.keyCount == 3)
        #expect(limiter.take("limited", now: t0) != nil)
    }

    @Test func aSprayOfNewClientsStaysWithinTheCapacity() {
        let limiter = RateLimiter<String>(perMinute: 2, capacity: 10)
        for index in 0..<50 { #expect(limiter.take("spray-\(index)", now: t0) == nil) }
        #expect((9...10).contains(limiter.keyCount), "\(limiter.keyCount)")
    }

    @Test func aKeyThatKeepsTryingIsReportedOnceAMinute() throws {
        let limiter = RateLimiter<String>(perMinute: 1)
        #expect(limiter.take("alice", now: t0) == nil)
        #expect(try #require(limiter.take("alice", now: t0)).isFirstInAMinute)
        #expect(try #require(limiter.take("alice", now: t0 + .seconds(30))).isFirstInAMinute == false)
        // Another key is reported on its own.
        #expect(limiter.take("bob", now: t0 + .seconds(30)) == nil)
        #expect(try #require(limiter.take("bob", now: t0 + .seconds(30))).isFirstInAMinute)
        // After a minute: one more attempt goes ahead, and the next refusal is reported again.
        #expect(limiter.take("alice", now: t0 + .seconds(60)) == nil)
        #expect(try #require(limiter.take("alice", now: t0 + .seconds(60))).isFirstInAMinute)
        #expect(try #require(limiter.take("alice", now: t0 + .seconds(61))).isFirstInAMinute == false)
    }
}
