import Foundation
import Logging
import SiteHarness
import Synchronization
import Testing

@testable import MQTT

/// The client against a real mosquitto.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct MQTTClientTests {
    struct Fixture {
        let directory: TemporaryDirectory
        let broker: TestBroker

        static func start() async throws -> Fixture {
            let directory = try TemporaryDirectory("unlockit-mqtt")
            let broker = try await TestBroker.start(in: directory.path)
            try await broker.addSuperuser(username: "tester", password: "tester password")
            return Fixture(directory: directory, broker: broker)
        }

        func client(
            _ id: String, loop: MQTTEventLoop? = nil, subscriptions: [String] = [], will: MQTTMessage? = nil, delivery: MQTTClient.Delivery = .stream
        ) throws -> MQTTClient {
            try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: "127.0.0.1", port: broker.port, clientID: id, username: "tester", password: "tester password", will: will,
                    subscriptions: subscriptions, backoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(500))),
                loop: loop, delivery: delivery)
        }

        func stop() async {
            await broker.stop()
            directory.remove()
        }

        /// Runs `body` with a fresh broker and always stops it afterwards.
        static func with(_ body: (Fixture) async throws -> Void) async throws {
            let fixture = try await start()
            do {
                try await body(fixture)
            } catch {
                await fixture.stop()
                throw error
            }
            await fixture.stop()
        }
    }

    @Test func publishAndReceive() async throws {
        try await Fixture.with { fixture in
            let receiver = try fixture.client("receiver", subscriptions: ["test/#"])
            let sender = try fixture.client("sender")
            receiver.start()
            sender.start()
            try await receiver.waitUntilConnected(timeout: .seconds(30))
            try await sender.waitUntilConnected(timeout: .seconds(30))
            try await Task.sleep(for: .milliseconds(200))  // the subscription's SUBACK
            for index in 0..<100 { try sender.publish(topic: "test/\(index)", payload: Array("message \(index)".utf8)) }
            var received: [String] = []
            for await message in receiver.messages {
                received.append(String(decoding: message.payload, as: UTF8.self))
                if received.count == 100 { break }
            }
            #expect(received == (0..<100).map { "message \($0)" })
            await sender.shutdown()
            await receiver.shutdown()
        }
    }

    @Test("A subscription gets each message at the lower of its QoS and the publisher's")
    func subscriptionQoS() async throws {
        try await Fixture.with { fixture in
            func receiver(_ id: String, _ qos: QoS) throws -> MQTTClient {
                try MQTTClient(
                    configuration: MQTTClientConfiguration(
                        host: "127.0.0.1", port: fixture.broker.port, clientID: id, username: "tester", password: "tester password",
                        subscriptions: ["test/qos/configured"], subscriptionQoS: qos))
            }
            let atMostOnce = try receiver("qos-0", .atMostOnce)
            let atLeastOnce = try receiver("qos-1", .atLeastOnce)
            let sender = try fixture.client("qos-sender")
            for client in [atMostOnce, atLeastOnce, sender] {
                client.start()
                try await client.waitUntilConnected(timeout: .seconds(30))
            }
            // A subscription made at run time asks for the same QoS as the configured ones.
            try await atMostOnce.subscribe("test/qos/later")
            try await atLeastOnce.subscribe("test/qos/later")
            try await Task.sleep(for: .milliseconds(200))  // the configured subscriptions' SUBACKs
            for topic in ["test/qos/configured", "test/qos/later"] {
                try sender.publish(topic: topic, payload: [1], qos: .atLeastOnce)
                try sender.publish(topic: topic, payload: [0], qos: .atMostOnce)
            }
            func received(_ client: MQTTClient) async -> [String: QoS] {
                var seen: [String: QoS] = [:]
                for await message in client.messages {
                    seen["\(message.topic)/\(message.payload[0])"] = message.qos
                    if seen.count == 4 { break }
                }
                return seen
            }
            #expect(
                await received(atMostOnce) == [
                    "test/qos/configured/1": .atMostOnce, "test/qos/configured/0": .atMostOnce, "test/qos/later/1": .atMostOnce,
                    "test/qos/later/0": .atMostOnce,
                ])
            #expect(
                await received(atLeastOnce) == [
                    "test/qos/configured/1": .atLeastOnce, "test/qos/configured/0": .atMostOnce, "test/qos/later/1": .atLeastOnce,
                    "test/qos/later/0": .atMostOnce,
                ])
            for client in [atMostOnce, atLeastOnce, sender] { await client.shutdown() }
        }
    }

    @Test("A keep-alive or port libmosquitto would refuse at every connect is refused when the client is made")
    func whatCannotConnectIsRefusedAtOnce() async throws {
        func make(keepAlive: Int32 = 10, port: Int = 1883) throws(MQTTError) -> MQTTClient {
            try MQTTClient(configuration: MQTTClientConfiguration(host: "127.0.0.1", port: port, clientID: "refused", keepAlive: keepAlive))
        }
        for keepAlive: Int32 in [1, 4, 65536, -1] {
            #expect(throws: MQTTError.self, "keep-alive \(keepAlive)") { _ = try make(keepAlive: keepAlive) }
        }
        for port in [0, 65536] {
            #expect(throws: MQTTError.self, "port \(port)") { _ = try make(port: port) }
        }
        for keepAlive: Int32 in [0, 5, 65535] { try await make(keepAlive: keepAlive).shutdown() }
    }

    @Test func publishingWhileDisconnectedFailsAtOnce() async throws {
        try await Fixture.with { fixture in
            let client = try fixture.client("lonely")
            #expect(throws: MQTTError.notConnected) { try client.publish(topic: "test/x", payload: [1]) }
            client.start()
            try await client.waitUntilConnected(timeout: .seconds(30))
            try client.publish(topic: "test/x", payload: [1])
            await client.shutdown()
            #expect(throws: MQTTError.shutDown) { try client.publish(topic: "test/x", payload: [1]) }
        }
    }

    @Test("A publish that saw a connection lost before its packet was queued never goes out on the next connection")
    func aPublishNeverCrossesAReconnect() async throws {
        try await Fixture.with { fixture in
            let received = LockedBox<[String]>([])
            let receiver = try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: "127.0.0.1", port: fixture.broker.port, clientID: "stale-receiver", username: "tester", password: "tester password",
                    subscriptions: ["test/stale"]),
                delivery: .handler { message in received.set(received.get() + [String(decoding: message.payload, as: UTF8.self)]) })
            let events = LockedBox<[MQTTConnectionEvent]>([])
            let sender = try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: "127.0.0.1", port: fixture.broker.port, clientID: "stale-sender", username: "tester", password: "tester password",
                    backoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(100))),
                onConnectionEvent: { event in events.set(events.get() + [event]) })
            receiver.start()
            sender.start()
            try await receiver.waitUntilConnected(timeout: .seconds(30))
            try await sender.waitUntilConnected(timeout: .seconds(30))
            try await Network.waitUntil("the receiver's subscription") {
                try sender.publish(topic: "test/stale", payload: Array("probe".utf8), qos: .atMostOnce)
                return received.get().contains("probe")
            }

            // The publish passes its check of the connection, then waits: meanwhile another client
            // takes the sender's id, and the broker drops the sender's connection.
            let inWindow = LockedBox(false)
            sender.core.publishGate.withLock { hook in
                hook = {
                    inWindow.set(true)
                    Thread.sleep(forTimeInterval: 1.5)
                }
            }
            let published = LockedBox(false)
            let publisher = Thread {
                try? sender.publish(topic: "test/stale", payload: Array("stale".utf8), qos: .atMostOnce)
                published.set(true)
            }
            publisher.start()
            try await Network.waitUntil("the publish in its window") { inWindow.get() }
            let usurper = try fixture.client("stale-sender")
            usurper.start()
            try await usurper.waitUntilConnected(timeout: .seconds(30))
            await usurper.shutdown()
            // The sender connects again; whatever it had queued from before is gone.
            try await Network.waitUntil("the sender's reconnection", timeout: .seconds(30)) {
                events.get().filter { $0 == .connected }.count >= 2 && sender.isConnected
            }
            try await Network.waitUntil("the publish's return") { published.get() }
            sender.core.publishGate.withLock { $0 = nil }
            try sender.publish(topic: "test/stale", payload: Array("fresh".utf8), qos: .atMostOnce)
            try await Network.waitUntil("the fresh message") { received.get().contains("fresh") }
            #expect(!received.get().contains("stale"), "\(received.get())")
            await sender.shutdown()
            await receiver.shutdown()
        }
    }

    @Test func aCancelledWaitForAConnectionEndsAtOnce() async throws {
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(host: "127.0.0.1", port: try Network.freePort(), clientID: "nobody-listens"))
        client.start()
        let wait = Task { try await client.waitUntilConnected(timeout: .seconds(600)) }
        try await Task.sleep(for: .milliseconds(100))
        wait.cancel()
        let ended = Task {
            try await Task.sleep(for: .seconds(5))
            Issue.record("the cancelled wait did not end")
        }
        await #expect(throws: CancellationError.self) { try await wait.value }
        ended.cancel()
        // Cancelled before it could even be filed: ends too.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await client.waitUntilConnected(timeout: .seconds(600))
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        await client.shutdown()
    }

    @Test func aWaitCancelledAfterItsTimeoutFoundNothingToEndStillEnds() async throws {
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(host: "127.0.0.1", port: try Network.freePort(), clientID: "nobody-listens"))
        client.start()
        // The timeout fires before its wait is filed, so it ends nothing; the wait is filed after it…
        client.core.cancelWaiter(id: 7, with: MQTTError.timedOut)
        let wait = Task { try await client.core.waitForConnection(id: 7) }
        try await Network.waitUntil("the wait to be filed", timeout: .seconds(5)) { client.core.filedWaits == 1 }
        // …and then its task is cancelled (the timeout's group ends its other task so): the wait ends.
        wait.cancel()
        let result = LockedBox<Result<Void, any Error>?>(nil)
        let watcher = Task { result.set(await wait.result) }
        let ended = (try? await Network.waitUntil("the cancelled wait to end", timeout: .seconds(5)) { result.get() != nil }) != nil
        #expect(ended)
        if !ended { client.core.cancelWaiter(id: 7, with: MQTTError.timedOut) }
        await watcher.value
        #expect(throws: CancellationError.self) { try result.get()?.get() }
        await client.shutdown()
    }

    @Test func reconnectsAndResubscribesAfterABrokerRestart() async throws {
        try await Fixture.with { fixture in
            let events = LockedBox<[MQTTConnectionEvent]>([])
            let received = LockedBox<[String]>([])
            let receiver = try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: "127.0.0.1", port: fixture.broker.port, clientID: "survivor", username: "tester", password: "tester password",
                    subscriptions: ["test/after"], backoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(300))),
                delivery: .handler { message in received.set(received.get() + [String(decoding: message.payload, as: UTF8.self)]) },
                onConnectionEvent: { event in events.set(events.get() + [event]) })
            receiver.start()
            try await receiver.waitUntilConnected(timeout: .seconds(30))

            try await fixture.broker.restart()
            try await Network.waitUntil("a reconnect") { events.get().filter { $0 == .connected }.count == 2 }
            #expect(events.get().contains(.disconnected))

            let sender = try fixture.client("sender-2")
            sender.start()
            try await sender.waitUntilConnected(timeout: .seconds(30))
            try await Network.waitUntil("the message after the restart") {
                try sender.publish(topic: "test/after", payload: Array("hello again".utf8))
                return received.get().contains("hello again")
            }
            await sender.shutdown()
            await receiver.shutdown()
        }
    }

    @Test func theLastWillIsPublishedOnlyWhenTheConnectionDies() async throws {
        try await Fixture.with { fixture in
            let watcher = try fixture.client("watcher", subscriptions: ["test/will/#"])
            watcher.start()
            try await watcher.waitUntilConnected(timeout: .seconds(30))
            try await Task.sleep(for: .milliseconds(200))

            // A clean shutdown sends DISCONNECT: the broker discards the will.
            let polite = try fixture.client("polite", will: MQTTMessage(topic: "test/will/polite", payload: Array("gone".utf8)))
            polite.start()
            try await polite.waitUntilConnected(timeout: .seconds(30))
            await polite.shutdown()

            // A client whose process dies: the broker publishes its will.
            let lock = try await TestLock(id: "lock-will", directory: fixture.directory.path)
            _ = try await fixture.broker.dynsec(["createClient", "lock-will", "-p", "lock password"])
            _ = try await fixture.broker.dynsec(["addClientRole", "lock-will", "test-superuser"])
            let process = try await lock.start(broker: fixture.broker.url, password: "lock password", pairing: false)
            let statusWatcher = try fixture.client("status-watcher", subscriptions: ["unlockit/v1/locks/lock-will/status"])
            statusWatcher.start()
            process.kill9()
            var sawOffline = false
            for await message in statusWatcher.messages where String(decoding: message.payload, as: UTF8.self).contains(#""online":false"#) {
                sawOffline = true
                break
            }
            #expect(sawOffline)

            let probe = try fixture.client("probe")
            probe.start()
            try await probe.waitUntilConnected(timeout: .seconds(30))
            try probe.publish(topic: "test/will/marker", payload: Array("marker".utf8))
            var topics: [String] = []
            for await message in watcher.messages {
                topics.append(message.topic)
                if message.topic == "test/will/marker" { break }
            }
            #expect(!topics.contains("test/will/polite"))
            for client in [watcher, statusWatcher, probe] { await client.shutdown() }
        }
    }

    @Test func oneLoopDrivesManyClients() async throws {
        try await Fixture.with { fixture in
            let loop = MQTTEventLoop(name: "many")
            let count = 200
            let received = LockedBox<Int>(0)
            let counter = NSLock()
            var clients: [MQTTClient] = []
            for index in 0..<count {
                let client = try fixture.client(
                    "many-\(index)", loop: loop, subscriptions: ["test/many/\(index)"],
                    delivery: .handler { _ in counter.withLock { received.set(received.get() + 1) } })
                client.start()
                clients.append(client)
            }
            try await Network.waitUntil("\(count) connections") { clients.allSatisfy(\.isConnected) }
            try await Task.sleep(for: .milliseconds(300))
            let sender = try fixture.client("many-sender")
            sender.start()
            try await sender.waitUntilConnected(timeout: .seconds(30))
            for index in 0..<count { try sender.publish(topic: "test/many/\(index)", payload: [UInt8(index % 256)]) }
            try await Network.waitUntil("every client to receive its message") { received.get() == count }
            for client in clients { await client.shutdown() }
            await sender.shutdown()
            await loop.shutdown()
        }
    }

    @Test("A client says why it is not connected, and forgets it once it is")
    func theLastFailureTellsWhy() async throws {
        try await Fixture.with { fixture in
            await fixture.broker.stop()
            let client = try fixture.client("patient")
            #expect(client.lastFailure == nil)
            client.start()
            try await Network.waitUntil("a refused attempt") { client.lastFailure == "Connection refused" }
            try await fixture.broker.restart(downtime: .zero)
            try await client.waitUntilConnected(timeout: .seconds(30))
            #expect(client.lastFailure == nil)

            let impostor = try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: "127.0.0.1", port: fixture.broker.port, clientID: "impostor", username: "tester", password: "wrong password"))
            impostor.start()
            try await Network.waitUntil("the broker's refusal") { impostor.lastFailure?.contains("not authorised") == true }
            #expect(!impostor.isConnected)
            await impostor.shutdown()
            await client.shutdown()
        }
    }

    @Test("A client is started once: again, or after its shutdown, nothing happens")
    func aClientStartsOnce() async throws {
        let listener = try Network.listener()
        defer { close(listener.fd) }
        let loop = MQTTEventLoop(name: "starts-once")
        let id = "client-started-once"
        let client = try MQTTClient(configuration: MQTTClientConfiguration(host: "127.0.0.1", port: listener.port, clientID: id), loop: loop)
        client.start()
        client.start()
        let first = try #require(TCPPeer.accept(listener.fd, from: id, timeout: .seconds(5)))
        defer { close(first) }
        // A second start would have dropped that connection for a new one.
        #expect(TCPPeer.accept(listener.fd, from: id, timeout: .milliseconds(500)) == nil)
        await client.shutdown()
        client.start()
        // After the shutdown, a start would connect again at once (the loop is still running).
        #expect(TCPPeer.accept(listener.fd, from: id, timeout: .seconds(1)) == nil)
        await loop.shutdown()
    }

    @Test("A lost client tries again when its backoff says, not at the loop's next housekeeping")
    func retriesKeepTheirOwnTime() async throws {
        // A "broker" that accepts and hangs up at once, and a loop whose housekeeping is 5 s apart.
        let listener = try Network.listener()
        defer { close(listener.fd) }
        let loop = MQTTEventLoop(name: "retries", logger: Logger(label: "test"), housekeepingInterval: .seconds(5))
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(
                host: "127.0.0.1", port: listener.port, clientID: "client-retrying",
                backoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(100), jitter: 0.2)),
            loop: loop)
        client.start()
        var attempts = 0
        let until = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < until, let peer = TCPPeer.accept(listener.fd, from: "client-retrying", timeout: .milliseconds(500)) {
            close(peer)
            attempts += 1
        }
        await client.shutdown()
        await loop.shutdown()
        // At 50–100 ms apart, well over five in two seconds; waiting for housekeeping, one or two.
        #expect(attempts >= 6, "\(attempts) attempts in 2 s")
    }

    @Test("A subscription the broker never answers ends at its timeout, and a late answer changes nothing")
    func anUnansweredSubscriptionTimesOut() async throws {
        // A broker of the test's own: it accepts the connection and never answers the SUBSCRIBE.
        let listener = try Network.listener()
        defer { close(listener.fd) }
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(host: "127.0.0.1", port: listener.port, clientID: "deaf-broker"))
        client.start()
        let peer = try #require(TCPPeer.accept(listener.fd, from: "deaf-broker", timeout: .seconds(5)))
        defer { close(peer) }
        let connack: [UInt8] = [0x20, 0x02, 0x00, 0x00]
        #expect(write(peer, connack, connack.count) == connack.count)
        try await client.waitUntilConnected(timeout: .seconds(30))
        let started = ContinuousClock.now
        await #expect(throws: MQTTError.timedOut) { try await client.subscribe("a/b", timeout: .milliseconds(300)) }
        #expect(ContinuousClock.now - started < .seconds(10))
        // The broker's answer at last, for the first message id: nobody waits for it, and the client goes on.
        let suback: [UInt8] = [0x90, 0x03, 0x00, 0x01, 0x00]
        #expect(write(peer, suback, suback.count) == suback.count)
        try await Task.sleep(for: .milliseconds(200))
        #expect(client.isConnected)
        await client.shutdown()
    }

    @Test("After a shutdown, another shutdown and a subscription answer at once instead of waiting for ever")
    func workAfterAShutdownIsAnswered() async throws {
        try await Fixture.with { fixture in
            // A client with a loop of its own: its shutdown ends that loop.
            let client = try fixture.client("after-shutdown")
            client.start()
            try await client.waitUntilConnected(timeout: .seconds(30))
            await client.shutdown()
            await client.shutdown()
            await #expect(throws: MQTTError.shutDown) { try await client.subscribe("a/b") }

            // A shared loop shut down before its client: the client's shutdown still returns.
            let loop = MQTTEventLoop(name: "shut-first")
            let shared = try fixture.client("shared-after-shutdown", loop: loop)
            shared.start()
            try await shared.waitUntilConnected(timeout: .seconds(30))
            await loop.shutdown()
            await shared.shutdown()
        }
    }

    @Test("A shutdown ends the client's streams and every wait for a connection, also one that starts after it")
    func aShutdownEndsStreamsAndWaits() async throws {
        try await Fixture.with { fixture in
            let client = try fixture.client("streams-end", subscriptions: ["streams/end"])
            let ended = LockedBox(0)
            let (messages, events) = (client.messages, client.connectionEvents)
            Task {
                for await _ in messages {}
                ended.update { $0 += 1 }
            }
            Task {
                for await _ in events {}
                ended.update { $0 += 1 }
            }
            client.start()
            try await client.waitUntilConnected(timeout: .seconds(30))
            await client.shutdown()
            // Polled, not awaited: a stream that never ends must fail this test, not hang it.
            try? await Network.waitUntil("both streams to end", timeout: .seconds(10)) { ended.get() >= 2 }
            #expect(ended.get() == 2)
            let waited = ContinuousClock.now
            await #expect(throws: MQTTError.shutDown) { try await client.waitUntilConnected(timeout: .seconds(30)) }
            #expect(ContinuousClock.now - waited < .seconds(5))
        }
    }

    @Test("A client stopped before the broker answered closes its socket at once, not when it is released")
    func aStoppedClientClosesItsSocket() async throws {
        let listener = try Network.listener()
        defer { close(listener.fd) }
        let loop = MQTTEventLoop(name: "closes")
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(host: "127.0.0.1", port: listener.port, clientID: "client-unanswered"), loop: loop)
        client.start()
        // The connection is accepted, and the client's CONNECT never answered.
        let peer = try #require(TCPPeer.accept(listener.fd, from: "client-unanswered", timeout: .seconds(5)))
        defer { close(peer) }
        let inode = try #require(TCPPeer.inode(ofClientOf: peer))
        #expect(TCPPeer.processHolds(socket: inode))
        await client.shutdown()
        try await Network.waitUntil("the client's socket to be closed", timeout: .seconds(5)) { !TCPPeer.processHolds(socket: inode) }
        withExtendedLifetime(client) {}
        await loop.shutdown()
    }

    /// The threads of this process whose kernel name starts with `prefix`.
    static func threads(named prefix: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            return name.hasPrefix(prefix)
        }.count
    }

    @Test("A loop's thread bears its name, cut to the 15 bytes Linux keeps, from the moment the loop exists")
    func aLoopsThreadIsNamedAtOnce() async {
        let loops = (0..<20).map { MQTTEventLoop(name: "named-\($0)-loop-thread") }
        for index in loops.indices {
            let kept = String(decoding: "named-\(index)-loop-thread".utf8.prefix(15), as: UTF8.self)
            #expect(Self.threads(named: kept) == 1, "\(kept)")
        }
        for loop in loops { await loop.shutdown() }
    }

    @Test("A client dropped without a shutdown closes its connection, and a loop of its own ends")
    func aDroppedClientStops() async throws {
        let listener = try Network.listener()
        defer { close(listener.fd) }
        let shared = MQTTEventLoop(name: "drops")
        // One client on a loop of its own (its thread is named after the client id), one on a shared loop.
        var inodes: [String] = []
        var peers: [Int32] = []
        do {
            let own = try MQTTClient(configuration: MQTTClientConfiguration(host: "127.0.0.1", port: listener.port, clientID: "dropown"))
            let onShared = try MQTTClient(
                configuration: MQTTClientConfiguration(host: "127.0.0.1", port: listener.port, clientID: "dropshared"), loop: shared)
            own.start()
            onShared.start()
            for id in ["dropown", "dropshared"] {
                let peer = try #require(TCPPeer.accept(listener.fd, from: id, timeout: .seconds(5)))
                peers.append(peer)
                inodes.append(try #require(TCPPeer.inode(ofClientOf: peer)))
            }
            #expect(inodes.allSatisfy { TCPPeer.processHolds(socket: $0) })
            #expect(Self.threads(named: "mqtt-dropown") == 1)
            // Dropped here, at the end of this scope, and not earlier after their last use.
            withExtendedLifetime((own, onShared)) {}
        }
        defer { for peer in peers { close(peer) } }
        try await Network.waitUntil("the dropped clients' sockets to be closed", timeout: .seconds(5)) {
            !inodes.contains { TCPPeer.processHolds(socket: $0) }
        }
        try await Network.waitUntil("the dropped client's own loop to end", timeout: .seconds(5)) {
            Self.threads(named: "mqtt-dropown") == 0
        }
        await shared.shutdown()
    }
}
