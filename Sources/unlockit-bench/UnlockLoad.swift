import NIOCore
import SiteHarness

/// Unlocks as a client sees them: HTTP request with a bearer token → access rule → challenge →
/// respond → result → HTTP response, over keep-alive connections of the ``LoadGenerator``.
struct UnlockLoad {
    typealias Run = LoadRun

    let site: BenchSite
    let generator: LoadGenerator
    /// Picks the lock of each request: a different sequence in every run of the benchmark…
    private let seed = UInt64.random(in: 0...UInt64.max)
    /// … and in every load run within it.
    private let runs = Counter()

    init(site: BenchSite) {
        self.site = site
        self.generator = LoadGenerator(port: site.server.port)
    }

    /// The requests of one run: connection `c`'s request `i` has one of the site's employees unlock a
    /// lock picked at random (by hashing, so that no connection needs a generator's state).
    private func unlocks() -> @Sendable (_ connection: Int, _ index: Int) -> ByteBuffer {
        let runSeed = SplitMix64.mix(seed &+ UInt64(runs.add()))
        return { [site] connection, index in
            let pick = SplitMix64.mix(runSeed &+ UInt64(connection) << 40 &+ UInt64(index))
            let lock = site.locks[Int(pick % UInt64(site.locks.count))]
            return LoadGenerator.request("POST", "/api/v1/locks/\(lock)/unlock", token: site.employees[connection % site.employees.count])
        }
    }

    /// `concurrency` clients, each unlocking one request after another, for `duration`.
    func closedLoop(concurrency: Int, duration: Duration) async -> Run {
        await generator.run(connections: concurrency, plan: .closed(until: .now() + .init(duration)), request: unlocks())
    }

    /// Requests started on a fixed schedule at `rate` in all, spread over `connections` clients, for
    /// `duration`. Each latency is counted from when its request was due (see ``LoadGenerator/Plan/open(start:spacing:total:)``).
    func openLoop(rate: Double, duration: Duration, connections: Int = 64) async -> Run {
        await generator.run(connections: connections, plan: Self.schedule(rate: rate, duration: duration), request: unlocks())
    }

    /// `rate` requests a second for `duration`, starting once the connections are open.
    static func schedule(rate: Double, duration: Duration) -> LoadGenerator.Plan {
        .open(start: .now() + .milliseconds(50), spacing: .nanoseconds(Int64(1e9 / rate)), total: Int((duration.seconds * rate).rounded()))
    }

    /// What became of the sign-ins.
    struct SignIns: Sendable {
        var succeeded = 0
        /// Answered 503 `server_busy`: more than the server's bcrypt queue takes.
        var turnedAway = 0
        /// Anything else: a failure.
        var failed = 0
    }

    /// Password sign-ins (bcrypt on the server) at `perSecond` for `duration`.
    func signInLoad(perSecond: Double, duration: Duration) async -> SignIns {
        // More connections than the server's bcrypt slots and queue together: a sign-in waits for
        // bcrypt, and the load must keep its pace whatever the server does with it.
        let connections = 32
        let users = site.signInUsers
        let run = await generator.run(connections: connections, plan: Self.schedule(rate: perSecond, duration: duration)) {
            connection, index in
            let user = users[(index * connections + connection) % users.count]
            return LoadGenerator.request(
                "POST", "/api/v1/auth/sign-in", json: #"{"email":"\#(user.email)","password":"\#(user.password)"}"#)
        }
        let turnedAway = run.statuses[503, default: 0]
        return SignIns(succeeded: run.granted, turnedAway: turnedAway, failed: run.errors - turnedAway)
    }
}

/// SplitMix64's finalizer: a well-mixed 64-bit value from any input, cheap and without state.
enum SplitMix64 {
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
