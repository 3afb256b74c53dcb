import Dispatch
import Glibc
import Synchronization

/// Turns a broker's host name into addresses away from the event loop.
///
/// Given a name, libmosquitto looks it up with `getaddrinfo` inside `mosquitto_connect_async` and
/// `mosquitto_reconnect_async`, on the calling thread: the event loop's, which drives every client of
/// a fleet. While a DNS server was slow to answer (seconds, when one is down) no client of the loop
/// read, wrote or kept its connection alive, and after a broker restart each of ten thousand clients
/// looked the same name up again, one after another. Here a name is looked up on a queue of its own,
/// once for all the clients that ask while that lookup is under way, and its answer is kept for
/// ``ttl``. The loop then hands libmosquitto a numeric address, which `getaddrinfo` turns around
/// without asking anyone.
///
/// A numeric address (IPv4 or IPv6) is answered at once and never looked up. A failed lookup is kept
/// for ``failureTTL``, so that a fleet retrying against an unknown name does not query for each client.
/// Lookups run one at a time: a process has one broker, and so one name.
public final class HostResolver: Sendable {
    /// Why a name gave no address, in `getaddrinfo`'s words ("Name or service not known").
    public struct Failure: Error, Sendable, Equatable {
        public var message: String
        public init(_ message: String) { self.message = message }
    }

    public typealias Answer = Result<[String], Failure>
    /// A blocking lookup: numeric addresses, in the order to try them.
    public typealias Lookup = @Sendable (String) -> Answer

    /// The resolver every event loop uses unless given another.
    public static let shared = HostResolver()

    /// How long a successful answer is used before the name is looked up again: a broker that moved
    /// is found at most this long after its old address stopped answering.
    public let ttl: Duration
    public let failureTTL: Duration

    private enum Entry {
        case known(Answer, until: ContinuousClock.Instant)
        case pending([@Sendable (Answer) -> Void])
    }

    private let lookup: Lookup
    private let entries = Mutex<[String: Entry]>([:])
    private let queue = DispatchQueue(label: "mqtt-resolver")
    private let lookups = Atomic<Int>(0)

    public init(ttl: Duration = .seconds(10), failureTTL: Duration = .seconds(1), lookup: @escaping Lookup = HostResolver.system) {
        self.ttl = ttl
        self.failureTTL = failureTTL
        self.lookup = lookup
    }

    /// How many lookups have been started: for tests.
    public var lookupCount: Int { lookups.load(ordering: .relaxed) }

    /// The addresses of `host` when they are known now: returned, and `whenDone` is not called.
    /// Otherwise `nil`, and `whenDone` is called on the resolver's queue once the lookup is over.
    public func resolve(_ host: String, whenDone: @escaping @Sendable (Answer) -> Void) -> Answer? {
        if Self.isNumeric(host) { return .success([host]) }
        let now = ContinuousClock.now
        let start = entries.withLock { entries -> Answer?? in
            switch entries[host] {
            case .known(let answer, let until) where now < until:
                return .some(answer)
            case .pending(var waiting):
                waiting.append(whenDone)
                entries[host] = .pending(waiting)
                return .some(nil)
            default:
                entries[host] = .pending([whenDone])
                return nil
            }
        }
        if let start { return start }
        lookups.add(1, ordering: .relaxed)
        queue.async { [self] in
            var answer = lookup(host)
            // The loop picks one of the addresses: an empty list is no answer.
            if case .success(let addresses) = answer, addresses.isEmpty { answer = .failure(Self.noAddress) }
            let lifetime = (try? answer.get()) == nil ? failureTTL : ttl
            let waiting = entries.withLock { entries -> [@Sendable (Answer) -> Void] in
                guard case .pending(let waiting) = entries[host] else { return [] }
                entries[host] = .known(answer, until: .now + lifetime)
                return waiting
            }
            for callback in waiting { callback(answer) }
        }
        return nil
    }

    /// Whether `host` is an IPv4 or IPv6 address rather than a name.
    public static func isNumeric(_ host: String) -> Bool {
        var buffer = in6_addr()
        return inet_pton(AF_INET, host, &buffer) == 1 || inet_pton(AF_INET6, host, &buffer) == 1
    }

    /// `getaddrinfo` as libmosquitto calls it (any family, stream sockets), its answers as text.
    public static let system: Lookup = { host in
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        guard rc == 0 else {
            let message = rc == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(rc))
            return .failure(Failure(message))
        }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var node = list
        while let info = node?.pointee {
            node = info.ai_next
            guard let address = numericAddress(info), !addresses.contains(address) else { continue }
            addresses.append(address)
        }
        return addresses.isEmpty ? .failure(noAddress) : .success(addresses)
    }

    static let noAddress = Failure("No address associated with hostname")

    /// The address as text: `getnameinfo` without a lookup, so an IPv6 address keeps its scope
    /// (`fe80::1%eth0`).
    private static func numericAddress(_ info: addrinfo) -> String? {
        guard let address = info.ai_addr else { return nil }
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(address, info.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else { return nil }
        return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
