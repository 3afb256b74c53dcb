import Foundation
import Glibc
import SiteHarness
import Synchronization

/// Unlocks as a client sees them: HTTP request with a bearer token → access rule → challenge →
/// respond → result → HTTP response, from worker threads with one keep-alive connection each.
struct UnlockLoad {
    let site: BenchSite

    struct Run: Sendable {
        var samples = Samples()
        var granted = 0
        var errors = 0
        var seconds = 0.0
        /// Open loop: the slowest request of each second of the schedule (by when it was due), so that
        /// one stall can be told from a backlog that builds up.
        var slowestBySecond: [Int: Duration] = [:]
        var rate: Double { Double(granted) / max(seconds, 0.000_001) }

        mutating func merge(_ other: Run) {
            samples.add(other.samples)
            granted += other.granted
            errors += other.errors
            slowestBySecond.merge(other.slowestBySecond, uniquingKeysWith: max)
        }
    }

    private func request(worker: Int, random: inout some RandomNumberGenerator) -> [UInt8] {
        RawHTTPConnection.request(
            "POST", "/api/v1/locks/\(site.locks.randomElement(using: &random)!)/unlock", token: site.employees[worker % site.employees.count])
    }

    /// `concurrency` clients, each unlocking one request after another, for `duration`.
    func closedLoop(concurrency: Int, duration: Duration) -> Run {
        let total = Mutex(Run())
        let start = ContinuousClock.now
        let deadline = start + duration
        onThreads(concurrency) { worker in
            var run = Run()
            var random = SystemRandomNumberGenerator()
            guard let connection = try? RawHTTPConnection(port: site.server.port) else {
                total.withLock { $0.errors += 1 }
                return
            }
            while ContinuousClock.now < deadline {
                let request = request(worker: worker, random: &random)
                let sent = ContinuousClock.now
                let status = (try? connection.send(request)) ?? 0
                run.samples.add(sent.duration(to: .now))
                if status == 200 { run.granted += 1 } else { run.errors += 1 }
            }
            total.withLock { $0.merge(run) }
        }
        var run = total.withLock { $0 }
        run.seconds = start.duration(to: .now).seconds
        return run
    }

    /// Requests started on a fixed schedule at `rate` in all, spread over `connections` clients, for
    /// `duration`. Each latency is counted from when its request was due, not from when it could be
    /// sent, so a server that falls behind shows it (no coordinated omission).
    func openLoop(rate: Double, duration: Duration, connections: Int = 64) -> Run {
        let total = Mutex(Run())
        let start = ContinuousClock.now + .milliseconds(50)
        let interval = Duration.nanoseconds(Int64(Double(connections) / rate * 1e9))
        let count = Int(duration.seconds * rate / Double(connections))
        onThreads(connections) { worker in
            var run = Run()
            var random = SystemRandomNumberGenerator()
            guard let connection = try? RawHTTPConnection(port: site.server.port) else {
                total.withLock { $0.errors += count }
                return
            }
            let offset = interval * (Double(worker) / Double(connections))
            for index in 0..<count {
                let due = start + offset + interval * index
                let request = request(worker: worker, random: &random)
                sleep(until: due)
                let status = (try? connection.send(request)) ?? 0
                let latency = due.duration(to: .now)
                run.samples.add(latency)
                let second = Int(start.duration(to: due).seconds)
                run.slowestBySecond[second] = max(run.slowestBySecond[second] ?? .zero, latency)
                if status == 200 { run.granted += 1 } else { run.errors += 1 }
            }
            total.withLock { $0.merge(run) }
        }
        var run = total.withLock { $0 }
        run.seconds = start.duration(to: .now).seconds
        return run
    }

    /// What became of the sign-ins.
    struct SignIns: Sendable {
        var succeeded = 0
        /// Answered 503 `server_busy`: more than the server's bcrypt queue takes.
        var turnedAway = 0
        /// Anything else: a failure.
        var failed = 0
    }

    /// Sign-ins at `perSecond` (bcrypt on the server) until `deadline`.
    func signInLoad(perSecond: Double, until deadline: ContinuousClock.Instant) -> SignIns {
        let counts = Mutex(SignIns())
        let interval = Duration.nanoseconds(Int64(1e9 / perSecond))
        let start = ContinuousClock.now
        // More connections than the server's bcrypt slots and queue together: a sign-in waits for
        // bcrypt, and the load must keep its pace whatever the server does with it.
        let connections = 32
        onThreads(connections) { worker in
            guard let connection = try? RawHTTPConnection(port: site.server.port) else { return }
            var index = worker
            while true {
                let due = start + interval * index
                guard due < deadline else { return }
                sleep(until: due)
                let user = site.signInUsers[index % site.signInUsers.count]
                let body = #"{"email":"\#(user.email)","password":"\#(user.password)"}"#
                let status = (try? connection.send(RawHTTPConnection.request("POST", "/api/v1/auth/sign-in", token: nil, json: body))) ?? 0
                counts.withLock {
                    switch status {
                    case 200: $0.succeeded += 1
                    case 503: $0.turnedAway += 1
                    default: $0.failed += 1
                    }
                }
                index += connections
            }
        }
        return counts.withLock { $0 }
    }
}

/// Sleeps the calling thread until `instant`.
func sleep(until instant: ContinuousClock.Instant) {
    let remaining = ContinuousClock.now.duration(to: instant)
    guard remaining > .zero else { return }
    var request = timespec(tv_sec: Int(remaining.components.seconds), tv_nsec: Int(remaining.components.attoseconds / 1_000_000_000))
    var left = timespec()
    while nanosleep(&request, &left) != 0 && errno == EINTR { request = left }
}
