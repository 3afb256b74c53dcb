import CMosquitto
import Foundation
import Glibc
import SiteHarness
import Testing

@testable import MQTT

/// The client over TLS, against a real mosquitto with a TLS listener (`broker-setup --tls-cert`).
@Suite(.serialized, .timeLimit(.minutes(10)))
struct TLSClientTests {
    struct Fixture {
        let directory: TemporaryDirectory
        let broker: TestBroker
        let certificates: TestCertificates

        /// A client of the TLS listener, at its numeric address, checking the broker as `tls` says.
        func client(
            _ id: String, tls: MQTTTLS, subscriptions: [String] = [], password: String = "tester password", port: Int? = nil,
            loop: MQTTEventLoop? = nil
        ) throws -> MQTTClient {
            try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: "127.0.0.1", port: port ?? broker.tlsPort!, clientID: id, username: "tester", password: password,
                    subscriptions: subscriptions, backoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(200)), tls: tls),
                loop: loop)
        }

        static func with(_ body: (Fixture) async throws -> Void) async throws {
            let directory = try TemporaryDirectory("unlockit-mqtt-tls")
            // The broker's certificate names localhost and 127.0.0.1, signed by an authority of the test's own.
            let certificates = try await TestCertificates.make(in: directory.path + "/pki")
            let broker = try await TestBroker.start(in: directory.path, certificates: certificates)
            let fixture = Fixture(directory: directory, broker: broker, certificates: certificates)
            do {
                try await broker.addSuperuser(username: "tester", password: "tester password")
                try await body(fixture)
            } catch {
                await broker.stop()
                directory.remove()
                throw error
            }
            await broker.stop()
            directory.remove()
        }
    }

    @Test("Over TLS a client reaches a broker whose certificate names the name it was given, though it connects to the numeric address")
    func namedBroker() async throws {
        try await Fixture.with { fixture in
            let ca = fixture.certificates.authorityFile
            // Checked against the name given, and against the address when no name is.
            let receiver = try fixture.client("tls-receiver", tls: MQTTTLS(caFile: ca, serverName: "localhost"), subscriptions: ["test/#"])
            let sender = try fixture.client("tls-sender", tls: MQTTTLS(caFile: ca))
            receiver.start()
            sender.start()
            try await receiver.waitUntilConnected(timeout: .seconds(30))
            try await sender.waitUntilConnected(timeout: .seconds(30))
            try await Task.sleep(for: .milliseconds(200))  // the subscription's SUBACK
            for index in 0..<20 { try sender.publish(topic: "test/\(index)", payload: Array("message \(index)".utf8)) }
            var received: [String] = []
            for await message in receiver.messages {
                received.append(String(decoding: message.payload, as: UTF8.self))
                if received.count == 20 { break }
            }
            #expect(received == (0..<20).map { "message \($0)" })
            await sender.shutdown()
            await receiver.shutdown()
        }
    }

    @Test("A broker whose certificate names another host, or comes from an authority not trusted, is never reached, and the client says why")
    func refusedBroker() async throws {
        try await Fixture.with { fixture in
            let stranger = try await TestCertificates.make(in: fixture.directory.path + "/other-pki")
            // The certificate carries 127.0.0.1, the address connected to, but not the name asked for.
            let misnamed = try fixture.client(
                "tls-misnamed", tls: MQTTTLS(caFile: fixture.certificates.authorityFile, serverName: "broker.example.com"))
            let untrusted = try fixture.client("tls-untrusted", tls: MQTTTLS(caFile: stranger.authorityFile, serverName: "localhost"))
            // Plain MQTT on the TLS listener gets nowhere either.
            let plain = try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: "127.0.0.1", port: fixture.broker.tlsPort!, clientID: "tls-plain", username: "tester", password: "tester password",
                    backoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(200))))
            for client in [misnamed, untrusted, plain] { client.start() }
            try await Task.sleep(for: .seconds(2))
            #expect(!misnamed.isConnected)
            #expect(!untrusted.isConnected)
            #expect(!plain.isConnected)
            #expect(
                misnamed.lastFailure?.contains("the broker's certificate was refused: hostname mismatch") == true, "\(misnamed.lastFailure ?? "none")"
            )
            #expect(untrusted.lastFailure?.contains("the broker's certificate was refused") == true, "\(untrusted.lastFailure ?? "none")")
            // The trusted, rightly named client still gets in.
            let good = try fixture.client("tls-good", tls: MQTTTLS(caFile: fixture.certificates.authorityFile, serverName: "localhost"))
            good.start()
            try await good.waitUntilConnected(timeout: .seconds(30))
            for client in [misnamed, untrusted, plain, good] { await client.shutdown() }
        }
    }

    @Test("A name is matched against the certificate's alternative names only, never its subject's common name")
    func commonNameIsNotAName() async throws {
        try await Fixture.with { fixture in
            // A broker whose certificate names localhost in its subject only, and 127.0.0.1 as an alternative name.
            let certificates = try await TestCertificates.make(
                in: fixture.directory.path + "/cn-pki", names: ["127.0.0.1"], commonName: "localhost")
            let broker = try await TestBroker.start(in: fixture.directory.path + "/cn", certificates: certificates)
            do {
                try await broker.addSuperuser(username: "tester", password: "tester password")
                let byName = try fixture.client(
                    "tls-cn-name", tls: MQTTTLS(caFile: certificates.authorityFile, serverName: "localhost"), port: broker.tlsPort)
                let byAddress = try fixture.client("tls-cn-address", tls: MQTTTLS(caFile: certificates.authorityFile), port: broker.tlsPort)
                byName.start()
                byAddress.start()
                try await byAddress.waitUntilConnected(timeout: .seconds(30))
                try? await Network.waitUntil("the name refused", timeout: .seconds(10)) { byName.lastFailure != nil }
                #expect(!byName.isConnected)
                #expect(byName.lastFailure == "the broker's certificate was refused: hostname mismatch", "\(byName.lastFailure ?? "none")")
                for client in [byName, byAddress] { await client.shutdown() }
            } catch {
                await broker.stop()
                throw error
            }
            await broker.stop()
        }
    }

    @Test("A refused CONNECT over TLS is said as such, and a connection refused in the handshake ends the attempt at once, without spinning")
    func failuresAroundTheHandshake() async throws {
        try await Fixture.with { fixture in
            let tls = MQTTTLS(caFile: fixture.certificates.authorityFile, serverName: "localhost")
            // The handshake passes; the broker refuses the password: its reason, not the handshake's.
            let refused = try fixture.client("tls-wrong-password", tls: tls, password: "not the password")
            // Nothing listens: the handshake's first write fails, and libmosquitto would retry it in
            // every turn of a loop that found the dead socket ready, until the keep-alive (10 s).
            let loop = MQTTEventLoop(name: "tls-nowhere")
            let nowhere = try fixture.client("tls-nowhere", tls: tls, port: try Network.freePort(), loop: loop)
            refused.start()
            nowhere.start()
            try? await Network.waitUntil("both failures said", timeout: .seconds(10)) {
                refused.lastFailure?.contains("the broker refused the connection") == true && nowhere.lastFailure == "Connection refused"
            }
            #expect(refused.lastFailure?.contains("the broker refused the connection") == true, "\(refused.lastFailure ?? "none")")
            #expect(nowhere.lastFailure == "Connection refused", "\(nowhere.lastFailure ?? "none")")
            try await Task.sleep(for: .milliseconds(500))  // more attempts, each a few turns
            // A few turns for each attempt (about one every 50–200 ms), not a spin.
            #expect(loop.turnCount < 1000, "\(loop.turnCount) turns")
            for client in [refused, nowhere] { await client.shutdown() }
            await loop.shutdown()
        }
    }

    @Test("A TLS handshake whose first write waits for the connection to be made goes on once it is (a broker across a network)")
    func handshakeAfterASlowConnect() async throws {
        try await Fixture.with { fixture in
            // The broker's answer to the client's first handshake message comes 200 ms late: a loop
            // woken for writability meanwhile would turn thousands of times.
            let relay = try SlowConnectRelay(to: fixture.broker.tlsPort!, answerDelay: .milliseconds(200))
            let loop = MQTTEventLoop(name: "tls-slow")
            let client = try fixture.client(
                "tls-slow", tls: MQTTTLS(caFile: fixture.certificates.authorityFile, serverName: "localhost"), port: relay.port, loop: loop)
            client.start()
            // About a second for the SYN sent again. Without going on, the attempt would wait out the
            // keep-alive (10 s here), writable and spinning, and only the next, to a relay now quick, would connect.
            try await client.waitUntilConnected(timeout: .seconds(6))
            // The loop woke for the handshake's messages, not in every turn while it waited for them.
            #expect(loop.turnCount < 200, "\(loop.turnCount) turns")
            await client.shutdown()
            await loop.shutdown()
            withExtendedLifetime(relay) {}
        }
    }

    @Test("Clients that trust the same authorities share them, loaded once: a fleet's locks do, each with a context of its own")
    func authoritiesAreShared() async throws {
        let directory = try TemporaryDirectory("unlockit-mqtt-tls")
        defer { directory.remove() }
        let site = try await TestCertificates.make(in: directory.path + "/site")
        let other = try await TestCertificates.make(in: directory.path + "/other")
        let contexts = try [site, site, other].map { try TLSContext.make(MQTTTLS(caFile: $0.authorityFile), host: "localhost") }
        let system = try (0..<2).map { _ in try TLSContext.make(MQTTTLS(), host: "localhost") }
        defer { for context in contexts + system { SSL_CTX_free(context) } }
        let stores = (contexts + system).map { SSL_CTX_get_cert_store($0) }
        #expect(contexts[0] != contexts[1])
        #expect(stores[0] == stores[1])
        #expect(stores[2] != stores[0])
        #expect(stores[3] == stores[4] && stores[3] != stores[0] && stores[3] != stores[2])
    }

    @Test("A client asks for the broker by the name it checks (SNI), and by no name when it has only an address")
    func serverNameIndication() async throws {
        let directory = try TemporaryDirectory("unlockit-mqtt-tls")
        defer { directory.remove() }
        let certificates = try await TestCertificates.make(in: directory.path + "/pki")
        // What each client's ClientHello carries, read off a plain listener that answers nothing.
        func clientHello(_ serverName: String?) async throws -> [UInt8] {
            let (listener, port) = try Network.listener()
            defer { close(listener) }
            let client = try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: "127.0.0.1", port: port, clientID: "tls-sni", tls: MQTTTLS(caFile: certificates.authorityFile, serverName: serverName)))
            client.start()
            var bytes = [UInt8](repeating: 0, count: 4096)
            var count = 0
            if let fd = TCPPeer.accept(listener, timeout: .seconds(10)) {
                var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                count = poll(&waiting, 1, 10_000) == 1 ? read(fd, &bytes, bytes.count) : 0
                close(fd)
            }
            await client.shutdown()
            return Array(bytes.prefix(max(count, 0)))
        }
        let named = try await clientHello("broker.example.com")
        #expect(named.count > 100 && named.firstRange(of: Array("broker.example.com".utf8)) != nil)
        let numeric = try await clientHello(nil)
        #expect(numeric.count > 100 && numeric.firstRange(of: Array("127.0.0.1".utf8)) == nil)
    }

    @Test("A client refuses at once an authorities file it cannot read, rather than retry for ever")
    func unreadableAuthorities() throws {
        #expect(throws: MQTTError.self) {
            try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: "127.0.0.1", port: 8883, clientID: "tls-no-ca", tls: MQTTTLS(caFile: "/nonexistent/ca.pem")))
        }
    }
}
