import NIOCore
import NIOPosix

/// Keep-alive HTTP/1.1 connections, all driven from one NIO event loop: the load generator.
///
/// One thread multiplexes every connection, as wrk does: the generator shares the machine with the
/// system it measures, so each request must cost it as little CPU as possible: ≈ 11 µs here, where
/// a blocking thread per connection cost ≈ 90.
final class LoadGenerator: Sendable {
    /// Every connection of every run on this one loop (thread) of NIO's shared group.
    private let loop = MultiThreadedEventLoopGroup.singleton.next()
    private let port: Int

    /// When each connection sends its requests.
    enum Plan: Sendable {
        /// Back to back: the next request as soon as the previous one is answered, until `until`.
        /// Latency counts from the send.
        case closed(until: NIODeadline)
        /// On a fixed schedule: `total` requests, request `k` due at `start + k × spacing`. Connection
        /// `c` of `n` takes requests `c`, `c + n`, `c + 2n`, …, each when it is due or as soon as the
        /// connection's previous one is answered, if that is later. Latency counts from when the
        /// request was due, not from when it could be sent, so a server that falls behind shows it
        /// (no coordinated omission).
        case open(start: NIODeadline, spacing: TimeAmount, total: Int)
    }

    init(port: Int) {
        self.port = port
    }

    /// The bytes of `METHOD path` on a keep-alive connection, with a bearer token and a JSON body if given.
    static func request(_ method: String, _ path: String, token: String? = nil, json: String? = nil) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeString("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        if let token { buffer.writeString("Authorization: Bearer \(token)\r\n") }
        if let json {
            buffer.writeString("Content-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)")
        } else {
            buffer.writeString("Content-Length: 0\r\n\r\n")
        }
        return buffer
    }

    /// Runs `plan` on `connections` connections; `request` gives the bytes of connection `c`'s
    /// request `i`. Returns once every connection has finished its part.
    func run(
        connections: Int, plan: Plan, request: @escaping @Sendable (_ connection: Int, _ index: Int) -> ByteBuffer
    ) async -> LoadRun {
        // An open loop's rate counts from its schedule's start, a closed loop's from before connecting.
        let started: NIODeadline = if case .open(let start, _, _) = plan { start } else { .now() }
        var results: [EventLoopFuture<LoadRun>] = []
        for connection in 0..<connections {
            let promise = loop.makePromise(of: LoadRun.self)
            let schedule = LoadConnection.Schedule(plan: plan, connection: connection, of: connections)
            ClientBootstrap(group: loop)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            LoadConnection(schedule: schedule, request: { request(connection, $0) }, done: promise))
                    }
                }
                .connect(host: "127.0.0.1", port: port)
                .whenFailure { _ in promise.succeed(LoadRun(unanswered: schedule.planned)) }
            results.append(promise.futureResult)
        }
        var total = LoadRun()
        for result in results {
            // Connections only ever succeed their promise, with what they saw.
            if let run = try? await result.get() { total.merge(run) }
        }
        total.seconds = Double(NIODeadline.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        return total
    }
}

/// What a run of the load generator saw.
struct LoadRun: Sendable {
    /// The latency of every answered request.
    var samples = Samples()
    /// Answered requests by HTTP status.
    var statuses: [Int: Int] = [:]
    /// Requests that got no answer: the connection failed or was closed.
    var unanswered = 0
    var seconds = 0.0
    /// Open loop: the slowest request of each second of the schedule (by when it was due), so that
    /// one stall can be told from a backlog that builds up.
    var slowestBySecond: [Int: Duration] = [:]

    var granted: Int { statuses[200, default: 0] }
    /// Everything but 200, and every request left unanswered.
    var errors: Int { statuses.filter { $0.key != 200 }.values.reduce(unanswered, +) }
    var rate: Double { Double(granted) / max(seconds, 0.000_001) }

    mutating func merge(_ other: LoadRun) {
        samples.add(other.samples)
        statuses.merge(other.statuses, uniquingKeysWith: +)
        unanswered += other.unanswered
        slowestBySecond.merge(other.slowestBySecond, uniquingKeysWith: max)
    }
}
