import Foundation
import SiteHarness
import Testing

/// Locks that reach the broker over TLS (`broker-setup --tls-cert`), on real processes: the server
/// stays on the broker's loopback listener and tells the locks the TLS one.
@Suite(.timeLimit(.minutes(10)))
struct TLSEndToEndTests {
    @Test("A lock told the TLS listener connects through it with the site's authority, is activated and opens")
    func lockOverTLS() async throws {
        try await Site.with(tls: true) { site in
            let authority = try #require(site.certificates).authorityFile
            #expect(site.brokerURL.hasPrefix("mqtts://"))
            let lock = try await TestLock(id: "tls-door", directory: site.directory.path)
            let reply = try await site.api.post("/api/v1/locks", token: site.admin, ["id": "tls-door", "name": "Door", "roomId": site.roomID])
            let mqtt = try #require(reply.json["mqtt"] as? [String: any Sendable], "\(reply)")
            // The address the lock is given is the TLS listener's, not the server's own.
            #expect(mqtt["broker"] as? String == site.brokerURL)
            // Connected over TLS, activated, and opened once as the admin (each step checked).
            try await site.activateAndOpen(lock, registered: reply, arguments: ["--ca-file", authority])
            // What the other test looks for in mosquitto's log is there for a lock that connects.
            let log = try String(contentsOfFile: "\(site.broker.directory)/mosquitto.log", encoding: .utf8)
            #expect(log.split(separator: "\n").contains { $0.contains("New client connected") && $0.contains("tls-door") })
            await lock.stop()
        }
    }

    @Test("A server that reaches the broker over TLS itself, checking it with a CA file, serves a lock that does too")
    func serverOverTLS() async throws {
        try await Site.with(tls: true, serverOverTLS: true) { site in
            let authority = try #require(site.certificates).authorityFile
            #expect(site.server.environment["UNLOCKIT_MQTT_URL"]?.hasPrefix("mqtts://") == true)
            // The server's broker connection is up: the health check says so.
            let health = try await site.server.operations.get("/healthz")
            #expect(health.json["broker"] as? String == "connected", "\(health)")
            let lock = try await TestLock(id: "tls-both", directory: site.directory.path)
            let reply = try await site.api.post("/api/v1/locks", token: site.admin, ["id": "tls-both", "name": "Door", "roomId": site.roomID])
            try await site.activateAndOpen(lock, registered: reply, arguments: ["--ca-file", authority])
            await lock.stop()
        }
    }

    @Test("A lock that does not trust the broker's authority never connects, says why, and its password never reaches the broker")
    func untrustedBroker() async throws {
        try await Site.with(tls: true) { site in
            let stranger = try await TestCertificates.make(in: site.directory.path + "/other-pki")
            let (lock, password) = try await site.registerLock("tls-wary")
            try await lock.start(
                broker: site.brokerURL, password: password, pairing: true, arguments: ["--ca-file", stranger.authorityFile],
                waitForConnection: false)
            // It says why, once.
            let process = try #require(lock.process)
            _ = try await process.waitForLine(containing: "cannot reach the broker: the broker's certificate was refused", timeout: .seconds(20))
            try await Task.sleep(for: .milliseconds(2500))  // more attempts, and another look at the last one's failure
            let lines = process.output
            #expect(!lines.contains { $0.contains("connected to the broker") }, "\(lines)")
            #expect(lines.filter { $0.contains("cannot reach the broker") }.count == 1, "\(lines)")
            // mosquitto logs each client that sent CONNECT; this one never got as far.
            let log = try String(contentsOfFile: "\(site.broker.directory)/mosquitto.log", encoding: .utf8)
            #expect(!log.contains("tls-wary"), "\(log)")
            await lock.stop()
        }
    }
}
