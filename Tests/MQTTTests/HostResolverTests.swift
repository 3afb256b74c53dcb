import Dispatch
import Glibc
import MQTT
import SiteHarness
import Synchronization
import Testing

/// Broker host names are looked up off the event loop, once for all the clients that need them.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct HostResolverTests {
    /// A lookup that answers `answer` once `gate` lets it, and remembers what it was asked.
    final class FakeLookup: Sendable {
        let asked = Mutex<[String]>([])
        let gate: DispatchSemaphore?
        let answer: HostResolver.Answer

        init(answer: HostResolver.Answer = .success(["127.0.0.1"]), held: Bool = false) {
            self.answer = answer
            self.gate = held ? DispatchSemaphore(value: 0) : nil
        }

        var lookup: HostResolver.Lookup {
            { [self] host in
                asked.withLock { $0.append(host) }
                gate?.wait()
                return answer
            }
        }

        func release() { gate?.signal() }
    }

    /// The answers `resolve` hands to its callback, for a test to wait on.
    final class Answers: Sendable {
        let received = Mutex<[HostResolver.Answer]>([])
        var count: Int { received.withLock { $0.count } }
        func record(_ answer: HostResolver.Answer) { received.withLock { $0.append(answer) } }
    }

    @Test("A numeric address is its own answer: nothing is looked up")
    func numericAddresses() {
        let fake = FakeLookup()
        let resolver = HostResolver(lookup: fake.lookup)
        for host in ["127.0.0.1", "10.1.2.3", "::1", "fd00::2"] {
            #expect(resolver.resolve(host) { _ in Issue.record("no callback for a numeric address") } == .success([host]))
        }
        #expect(resolver.lookupCount == 0)
        #expect(!HostResolver.isNumeric("broker.local"))
        #expect(!HostResolver.isNumeric("127.0.0.1.example"))
    }

    @Test("Everyone asking while a name is looked up shares that one lookup, and its answer is kept")
    func oneLookupForAll() async throws {
        let fake = FakeLookup(held: true)
        defer { fake.release() }
        let resolver = HostResolver(lookup: fake.lookup)
        let answers = Answers()
        for _ in 0..<20 {
            #expect(resolver.resolve("broker.test") { answers.record($0) } == nil)
        }
        fake.release()
        try await Network.waitUntil("twenty answers") { answers.count == 20 }
        #expect(answers.received.withLock { $0 }.allSatisfy { $0 == .success(["127.0.0.1"]) })
        #expect(resolver.resolve("broker.test") { _ in Issue.record("a kept answer needs no callback") } == .success(["127.0.0.1"]))
        #expect(fake.asked.withLock { $0 } == ["broker.test"])
    }

    @Test("An answer is looked up again once it is older than its time to live; a failure sooner")
    func answersExpire() async throws {
        let found = FakeLookup()
        // Times to live long enough that a busy machine does not expire an answer between two lines.
        let resolver = HostResolver(ttl: .seconds(1), lookup: found.lookup)
        let answers = Answers()
        _ = resolver.resolve("broker.test") { answers.record($0) }
        try await Network.waitUntil("the first answer") { answers.count == 1 }
        #expect(resolver.resolve("broker.test") { answers.record($0) } == .success(["127.0.0.1"]))
        try await Task.sleep(for: .milliseconds(1200))
        #expect(resolver.resolve("broker.test") { answers.record($0) } == nil)
        try await Network.waitUntil("the second answer") { answers.count == 2 }
        #expect(resolver.lookupCount == 2)

        let unknown = FakeLookup(answer: .failure(HostResolver.Failure("Name or service not known")))
        let failing = HostResolver(ttl: .seconds(60), failureTTL: .seconds(1), lookup: unknown.lookup)
        let failures = Answers()
        _ = failing.resolve("nowhere.test") { failures.record($0) }
        try await Network.waitUntil("the failure") { failures.count == 1 }
        #expect(failing.resolve("nowhere.test") { failures.record($0) } == .failure(HostResolver.Failure("Name or service not known")))
        try await Task.sleep(for: .milliseconds(1200))
        #expect(failing.resolve("nowhere.test") { failures.record($0) } == nil)
        try await Network.waitUntil("the second failure") { failures.count == 2 }
        #expect(failing.lookupCount == 2)
    }

    @Test("A lookup that finds no address is a failure, not an empty answer")
    func noAddressIsAFailure() async throws {
        let empty = FakeLookup(answer: .success([]))
        let resolver = HostResolver(lookup: empty.lookup)
        let answers = Answers()
        #expect(resolver.resolve("empty.test") { answers.record($0) } == nil)
        try await Network.waitUntil("the answer") { answers.count == 1 }
        #expect(answers.received.withLock { $0 } == [.failure(HostResolver.Failure("No address associated with hostname"))])
    }

    @Test("The system's lookup gives numeric addresses")
    func systemLookup() throws {
        let addresses = try HostResolver.system("localhost").get()
        #expect(!addresses.isEmpty)
        #expect(addresses.allSatisfy(HostResolver.isNumeric))
        #expect(addresses.contains("127.0.0.1") || addresses.contains("::1"))
    }

    private static func configuration(host: String, port: Int, id: String) -> MQTTClientConfiguration {
        MQTTClientConfiguration(host: host, port: port, clientID: id, backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(100)))
    }

    @Test("While one client's broker name is looked up, the loop's other clients go on")
    func aSlowLookupHoldsNoOneUp() async throws {
        let fake = FakeLookup(held: true)
        defer { fake.release() }
        let loop = MQTTEventLoop(name: "slow-dns", resolver: HostResolver(lookup: fake.lookup))
        let named = try Network.listener()
        let numeric = try Network.listener()
        defer {
            close(named.fd)
            close(numeric.fd)
        }
        let waiting = try MQTTClient(configuration: Self.configuration(host: "broker.test", port: named.port, id: "resolver-waiting"), loop: loop)
        let other = try MQTTClient(configuration: Self.configuration(host: "127.0.0.1", port: numeric.port, id: "resolver-other"), loop: loop)
        waiting.start()
        try await Network.waitUntil("the lookup to start") { fake.asked.withLock { !$0.isEmpty } }
        other.start()
        let otherPeer = try #require(TCPPeer.accept(numeric.fd, from: "resolver-other", timeout: .seconds(5)), "the loop was held up by the lookup")
        defer { close(otherPeer) }
        fake.release()
        let waitingPeer = try #require(TCPPeer.accept(named.fd, from: "resolver-waiting", timeout: .seconds(5)))
        defer { close(waitingPeer) }
        await waiting.shutdown()
        await other.shutdown()
        await loop.shutdown()
    }

    @Test("A fleet of clients of one broker looks its name up once")
    func aFleetLooksUpOnce() async throws {
        let fake = FakeLookup()
        let loop = MQTTEventLoop(name: "fleet-dns", resolver: HostResolver(lookup: fake.lookup))
        let listener = try Network.listener(backlog: 64)
        defer { close(listener.fd) }
        let count = 30
        let clients = try (0..<count).map {
            try MQTTClient(configuration: Self.configuration(host: "fleet.test", port: listener.port, id: "resolver-fleet-\($0)"), loop: loop)
        }
        for client in clients { client.start() }
        var peers: [Int32] = []
        defer { for peer in peers { close(peer) } }
        var waiting = Set((0..<count).map { "resolver-fleet-\($0)" })
        while !waiting.isEmpty {
            let peer = try #require(TCPPeer.accept(listener.fd, fromOneOf: waiting, timeout: .seconds(5)))
            peers.append(peer.fd)
            waiting.remove(peer.clientID)
        }
        #expect(fake.asked.withLock { $0 } == ["fleet.test"])
        for client in clients { await client.shutdown() }
        await loop.shutdown()
    }

    @Test("A name with several addresses: attempts that fail go on to the next")
    func everyAddressIsTried() async throws {
        let listener = try Network.listener()
        defer { close(listener.fd) }
        // Nothing listens on 127.0.0.2 at that port (the listener is bound to 127.0.0.1 only).
        let fake = FakeLookup(answer: .success(["127.0.0.2", "127.0.0.1"]))
        let loop = MQTTEventLoop(name: "two-addresses", resolver: HostResolver(lookup: fake.lookup))
        let client = try MQTTClient(configuration: Self.configuration(host: "pair.test", port: listener.port, id: "resolver-pair"), loop: loop)
        client.start()
        let peer = try #require(TCPPeer.accept(listener.fd, from: "resolver-pair", timeout: .seconds(5)))
        defer { close(peer) }
        #expect(client.lastFailure == "Connection refused")
        await client.shutdown()
        await loop.shutdown()
    }

    @Test("A name that gives no address says so, and the client keeps trying")
    func anUnknownNameSaysWhy() async throws {
        let fake = FakeLookup(answer: .failure(HostResolver.Failure("Name or service not known")))
        let loop = MQTTEventLoop(name: "unknown-name", resolver: HostResolver(failureTTL: .milliseconds(50), lookup: fake.lookup))
        let client = try MQTTClient(configuration: Self.configuration(host: "nowhere.test", port: 1883, id: "lost"), loop: loop)
        client.start()
        try await Network.waitUntil("the failure") { client.lastFailure == "Name or service not known" }
        try await Network.waitUntil("a second lookup") { fake.asked.withLock { $0.count } >= 2 }
        #expect(!client.isConnected)
        await client.shutdown()
        await loop.shutdown()
    }
}
