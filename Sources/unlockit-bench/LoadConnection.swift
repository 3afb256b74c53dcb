import NIOCore

/// One keep-alive connection of the ``LoadGenerator``: sends each request when its schedule says,
/// reads the response and records its status and latency. Lives on the generator's event loop.
final class LoadConnection: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// One connection's share of a ``LoadGenerator/Plan``.
    struct Schedule: Sendable {
        let plan: LoadGenerator.Plan
        let connection: Int
        let connections: Int

        init(plan: LoadGenerator.Plan, connection: Int, of connections: Int) {
            self.plan = plan
            self.connection = connection
            self.connections = connections
        }

        /// How many requests this connection is to send (closed loop: at least one).
        var planned: Int {
            guard case .open(_, _, let total) = plan else { return 1 }
            return max(0, total - connection + connections - 1) / connections
        }

        /// When this connection's request `index` is due, or nil when the plan has no more.
        func due(_ index: Int, now: NIODeadline) -> NIODeadline? {
            switch plan {
            case .closed(let until):
                return now < until ? now : nil
            case .open(let start, let spacing, _):
                guard index < planned else { return nil }
                return start + .nanoseconds(spacing.nanoseconds * Int64(connection + index * connections))
            }
        }

        /// Open loop: the second of the schedule a request due at `due` belongs to.
        func second(of due: NIODeadline) -> Int? {
            guard case .open(let start, _, _) = plan else { return nil }
            return Int((due - start).nanoseconds / 1_000_000_000)
        }
    }

    private let schedule: Schedule
    private let request: (Int) -> ByteBuffer
    private let done: EventLoopPromise<LoadRun>
    private var run = LoadRun()
    private var sent = 0
    /// When the request in flight was due (open loop) or sent (closed loop).
    private var inFlight: NIODeadline?
    private var received: ByteBuffer?
    private var closed = false
    /// The plan has no more requests for this connection, which it then closes itself.
    private var finished = false

    init(schedule: Schedule, request: @escaping (Int) -> ByteBuffer, done: EventLoopPromise<LoadRun>) {
        self.schedule = schedule
        self.request = request
        self.done = done
    }

    func channelActive(context: ChannelHandlerContext) {
        sendNext(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if received == nil {
            received = bytes
        } else {
            received!.writeBuffer(&bytes)
        }
        while let due = inFlight, let status = HTTPResponseFraming.take(from: &received!) {
            let latency = Duration.nanoseconds(Int64(NIODeadline.now().uptimeNanoseconds) - Int64(due.uptimeNanoseconds))
            run.samples.add(latency)
            run.statuses[status, default: 0] += 1
            if let second = schedule.second(of: due) {
                run.slowestBySecond[second] = max(run.slowestBySecond[second] ?? .zero, latency)
            }
            inFlight = nil
            sendNext(context)
        }
        if received!.readableBytes == 0 { received = nil }
    }

    func channelInactive(context: ChannelHandlerContext) {
        guard !closed else { return }
        closed = true
        switch schedule.plan {
        case .open: run.unanswered = schedule.planned - run.samples.count
        // Closed by the other side before the plan ended: that client's place in the loop is lost.
        case .closed: run.unanswered = inFlight == nil && finished ? 0 : 1
        }
        done.succeed(run)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func sendNext(_ context: ChannelHandlerContext) {
        let now = NIODeadline.now()
        guard let due = schedule.due(sent, now: now) else {
            finished = true
            context.close(promise: nil)
            return
        }
        if due > now {
            context.eventLoop.assumeIsolated().scheduleTask(deadline: due) { [self] in send(due, context) }
        } else {
            send(due, context)
        }
    }

    private func send(_ due: NIODeadline, _ context: ChannelHandlerContext) {
        guard !closed else { return }
        sent += 1
        inFlight = due
        context.writeAndFlush(wrapOutboundOut(request(sent - 1)), promise: nil)
    }
}

/// Finds where one HTTP/1.1 response ends (its head and a `Content-Length` body).
enum HTTPResponseFraming {
    /// Takes one whole response off the front of `buffer` and returns its status code; nil (and
    /// nothing taken) until the whole response is there.
    static func take(from buffer: inout ByteBuffer) -> Int? {
        let framed = buffer.withUnsafeReadableBytes { bytes -> (status: Int, size: Int)? in
            guard let headEnd = headEnd(bytes), headEnd >= 12 else { return nil }
            var status = 0
            for index in 9..<12 {
                guard (48...57).contains(bytes[index]) else { return nil }
                status = status * 10 + Int(bytes[index] - 48)
            }
            let size = headEnd + contentLength(bytes[0..<headEnd])
            return bytes.count >= size ? (status, size) : nil
        }
        guard let framed else { return nil }
        buffer.moveReaderIndex(forwardBy: framed.size)
        return framed.status
    }

    /// The index just past the blank line that ends the head.
    private static func headEnd(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    /// The value of the head's `Content-Length` field (any case), 0 without one.
    private static func contentLength(_ head: Slice<UnsafeRawBufferPointer>) -> Int {
        let name = Array("content-length:".utf8)
        for line in head.split(separator: 10) where line.count > name.count {
            let matches = zip(line, name).allSatisfy { byte, letter in ((65...90).contains(byte) ? byte + 32 : byte) == letter }
            guard matches else { continue }
            var value = 0
            for byte in line.dropFirst(name.count) where (48...57).contains(byte) { value = value * 10 + Int(byte - 48) }
            return value
        }
        return 0
    }
}
