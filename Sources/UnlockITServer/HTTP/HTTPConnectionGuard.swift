import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

/// What one client, and all of them together, may hold of a listener's HTTP connections.
///
/// The idle timeout closes a silent connection, but a client that sends one byte now and then is
/// never silent: a request's head or body (or the rest of a body the server already answered,
/// which it reads to the end) sent slowly enough would hold its connection for ever, and enough of
/// them would take every descriptor the process has. So a request must arrive whole within
/// `requestTimeout` of its first line, and one client (``ClientAddress``: an IPv4 address, an IPv6
/// /64) may hold at most `perClient` connections at once; more are closed as they open. A trusted
/// proxy's connections carry many clients and are not counted per client (the proxy limits its
/// own). Clients with many addresses (an IPv6 /48 holds 65,536 /64s) would still add up, so all
/// connections together, a proxy's too, are at most `total`.
///
/// The idle timer does not run while an answer is being written either: a client that asks for
/// large answers and never reads them would hold its connection, and the answers' buffers, for as
/// long as its TCP stack answers keep-alives. So a connection whose writes stay blocked (the channel
/// unwritable: more unsent than NIO's high-water mark, the kernel's buffers full) for
/// `requestTimeout` is closed too. A client must take its answers at some rate to keep one.
final class HTTPConnectionLimits: Sendable {
    let perClient: Int
    let total: Int
    let requestTimeout: TimeAmount
    private let trustedProxies: Set<String>
    private struct Held {
        var byClient: [String: Int] = [:]
        var total = 0
    }
    private let open = Mutex(Held())

    init(perClient: Int, total: Int, requestTimeout: TimeAmount, trustedProxies: Set<String>) {
        self.perClient = perClient
        self.total = total
        self.requestTimeout = requestTimeout
        self.trustedProxies = trustedProxies
    }

    /// The connection's client, counted; nil if the listener holds `total` connections already, or
    /// that client `perClient`. A trusted proxy's connections are counted in the total only ("" as
    /// their key).
    func admit(peer: SocketAddress?) -> String? {
        let client =
            if let peer, trustedProxies.isEmpty || !trustedProxies.contains(ClientAddress.canonical(peer)) {
                ClientAddress.key(peer: peer, forwardedFor: nil, trustedProxies: [])
            } else {
                ""
            }
        return open.withLock { open in
            guard open.total < total else { return nil }
            if !client.isEmpty {
                let held = open.byClient[client, default: 0]
                guard held < perClient else { return nil }
                open.byClient[client] = held + 1
            }
            open.total += 1
            return client
        }
    }

    func release(_ client: String) {
        open.withLock { open in
            open.total -= 1
            guard !client.isEmpty else { return }
            let held = open.byClient[client, default: 0] - 1
            open.byClient[client] = held > 0 ? held : nil
        }
    }

    /// How many connections `client` holds (for tests).
    func held(by client: String) -> Int { open.withLock { $0.byClient[client, default: 0] } }

    /// How many connections the listener holds (for tests).
    var held: Int { open.withLock { $0.total } }

    /// The handler for one new connection.
    func handler() -> HTTPConnectionGuard { HTTPConnectionGuard(limits: self) }
}

/// One connection's share of ``HTTPConnectionLimits``: counted while it is open, closed as it opens
/// when its client holds too many, and closed when a request takes longer than the request timeout
/// to arrive or its answers wait that long unread. A request that arrives in one read (nearly all: an
/// unlock's fits in a packet) never needs a timer: one is set only when a read ends with a request
/// begun and not ended, or when the connection stops taking writes.
final class HTTPConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let limits: HTTPConnectionLimits
    private var client: String?
    /// When the request now arriving began; nil between requests.
    private var requestStarted: NIODeadline?
    private var deadline: Scheduled<Void>?
    /// Closes the connection if its writes are still blocked then; nil while it takes them.
    private var stalled: Scheduled<Void>?

    init(limits: HTTPConnectionLimits) { self.limits = limits }

    func handlerAdded(context: ChannelHandlerContext) {
        guard let client = limits.admit(peer: context.channel.remoteAddress) else {
            context.close(promise: nil)
            return
        }
        self.client = client
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        stalled?.cancel()
        stalled = nil
        if let client { limits.release(client) }
        client = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            requestStarted = .now()
        case .end:
            requestStarted = nil
            deadline?.cancel()
            deadline = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if let requestStarted, deadline == nil {
            let channel = context.channel
            deadline = context.eventLoop.scheduleTask(deadline: requestStarted + limits.requestTimeout) { channel.close(promise: nil) }
        }
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stalled?.cancel()
            stalled = nil
        } else if stalled == nil {
            let channel = context.channel
            stalled = context.eventLoop.scheduleTask(in: limits.requestTimeout) { channel.close(promise: nil) }
        }
        context.fireChannelWritabilityChanged()
    }
}
