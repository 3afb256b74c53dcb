import Foundation
import Glibc
import SiteHarness
import Testing

/// The server's HTTP connections against clients that go silent or send slowly.
@Suite(.timeLimit(.minutes(10)))
struct HTTPConnectionEndToEndTests {
    /// A plain TCP connection to the server, for writing partial requests.
    final class RawConnection {
        let fd: Int32

        init(port: Int, receiveBuffer: Int32? = nil) throws {
            guard let fd = Network.connect(port: port, receiveBuffer: receiveBuffer) else { throw HarnessError("connect() failed") }
            self.fd = fd
        }

        deinit { close(fd) }

        func send(_ text: String) throws {
            let bytes = Array(text.utf8)
            guard Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw HarnessError("send() failed") }
        }

        /// Whether the server has closed the connection (what it sent before is read and dropped).
        var isClosed: Bool {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 0) > 0 else { return false }
                if recv(fd, &buffer, buffer.count, 0) <= 0 { return true }
            }
        }

        /// Reads until the server closes the connection; returns what it sent and how long that took,
        /// or nil if it was still open after `limit`.
        func readUntilClosed(limit: Duration) -> (text: String, after: Duration)? {
            let start = ContinuousClock.now
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while ContinuousClock.now - start < limit {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 100) > 0 else { continue }
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { return (String(decoding: received, as: UTF8.self), ContinuousClock.now - start) }
                received += buffer[0..<count]
            }
            return nil
        }
    }

    @Test("A connection silent for the idle timeout is closed, in the middle of a request or between requests")
    func silentConnectionsAreClosed() async throws {
        try await Site.with(serverEnvironment: ["UNLOCKIT_HTTP_IDLE_TIMEOUT": "1"]) { site in
            // A request's head that never ends: the connection is closed, not held.
            let stalled = try RawConnection(port: site.server.port)
            try stalled.send("GET /api/v1/openapi.json HTTP/1.1\r\nHost: unlockit\r\n")
            let cut = try #require(stalled.readUntilClosed(limit: .seconds(10)), "a half-sent request kept its connection open")
            #expect(cut.after >= .milliseconds(900), "closed after \(cut.after), before the idle timeout")

            // A keep-alive connection whose client has nothing more to ask: answered, then closed.
            let idle = try RawConnection(port: site.server.port)
            try idle.send("GET /api/v1/openapi.json HTTP/1.1\r\nHost: unlockit\r\n\r\n")
            let answered = try #require(idle.readUntilClosed(limit: .seconds(10)), "an idle connection was kept open")
            #expect(answered.text.hasPrefix("HTTP/1.1 200"), "\(answered.text)")

            // Requests that keep coming are served as before.
            #expect(try await site.api.get("/api/v1/openapi.json").status == 200)
        }
    }

    @Test("A request that arrives a byte at a time is cut off at the request timeout, also after it was answered")
    func tricklingRequestsAreCutOff() async throws {
        try await Site.with(serverEnvironment: ["UNLOCKIT_HTTP_IDLE_TIMEOUT": "1", "UNLOCKIT_HTTP_REQUEST_TIMEOUT": "2"]) { site in
            // Answered at once (no such route), then its promised body is read to the end: a byte
            // every 300 ms keeps the connection from ever being idle for a second.
            let trickle = try RawConnection(port: site.server.port)
            try trickle.send("POST /no-such-route HTTP/1.1\r\nHost: unlockit\r\nContent-Length: 1000000\r\n\r\n")
            let start = ContinuousClock.now
            var closedAfter: Duration?
            while ContinuousClock.now - start < .seconds(10) {
                if trickle.isClosed {
                    closedAfter = ContinuousClock.now - start
                    break
                }
                try? trickle.send("x")
                try await Task.sleep(for: .milliseconds(300))
            }
            let after = try #require(closedAfter, "a trickling request kept its connection for 10 s")
            #expect(after >= .milliseconds(1500), "closed after \(after), before the request timeout")
            #expect(try await site.api.get("/api/v1/openapi.json").status == 200)
        }
    }

    @Test("A client that takes none of its answers loses its connection at the request timeout, and the answers it left")
    func unreadAnswersAreCutOff() async throws {
        try await Site.with(serverEnvironment: ["UNLOCKIT_HTTP_IDLE_TIMEOUT": "1", "UNLOCKIT_HTTP_REQUEST_TIMEOUT": "2"]) { site in
            // Answers of about 100 KB, asked for at once and not read, twice as many bytes as the
            // server's socket may buffer on this host (tcp_wmem's maximum: 4 MiB here, 16 MiB on
            // some), and at least 100: the server's writes stall, which the idle timer does not
            // count as idle.
            let document = try await site.api.get("/api/v1/openapi.json").text.utf8.count
            let wmem = try? String(contentsOfFile: "/proc/sys/net/ipv4/tcp_wmem", encoding: .utf8)
            let sendLimit = wmem.flatMap { $0.split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) } } ?? 4 << 20
            let count = max(100, 2 * sendLimit / document + 10)
            let reader = try RawConnection(port: site.server.port, receiveBuffer: 4096)
            try reader.send(String(repeating: "GET /api/v1/openapi.json HTTP/1.1\r\nHost: unlockit\r\n\r\n", count: count))
            try await Task.sleep(for: .seconds(5))
            // Read now, everything comes that the server wrote before it closed the connection, and
            // no more. A server that kept it would send them all and close it a second after.
            let taken = try #require(reader.readUntilClosed(limit: .seconds(30)), "the connection was still open 30 s after its first read")
            let answers = taken.text.components(separatedBy: "HTTP/1.1 200 OK").count - 1
            #expect(taken.text.hasPrefix("HTTP/1.1 200 OK") && answers < count, "\(answers) answers taken of \(count)")
            #expect(try await site.api.get("/api/v1/openapi.json").status == 200)
        }
    }

    @Test("One client's connections beyond its limit are closed as they open; the ones it holds work")
    func aClientsConnectionsAreLimited() async throws {
        try await withThreeHeld(["UNLOCKIT_HTTP_CONNECTIONS_PER_CLIENT": "3"], refusal: "a fourth connection of one client was kept") {
            site, held in
            // One closed (the server ended its side; now the client does), another may open.
            held.removeFirst()
            try await Task.sleep(for: .milliseconds(200))
            let fifth = try RawConnection(port: site.server.port)
            try fifth.send("GET /api/v1/openapi.json HTTP/1.1\r\nHost: unlockit\r\nConnection: close\r\n\r\n")
            let served = try #require(fifth.readUntilClosed(limit: .seconds(5)), "no answer once a place was free")
            #expect(served.text.hasPrefix("HTTP/1.1 200"), "\(served.text)")
        }
    }

    @Test("All clients' connections together beyond the listener's limit are closed as they open")
    func allConnectionsAreLimited() async throws {
        // Far below its own limit of 100, this client gets no fourth: the listener holds three.
        let limits = ["UNLOCKIT_HTTP_CONNECTIONS_PER_CLIENT": "100", "UNLOCKIT_HTTP_CONNECTIONS": "3"]
        try await withThreeHeld(limits, refusal: "a fourth connection was kept") { _, _ in }
    }

    /// On a site whose server's `limits` let this client hold three API connections: waits out the
    /// harness's pooled ones, opens three that the server keeps, checks that a fourth is closed as it
    /// opens, that the operations listener (which counts its own) still answers, and that the first
    /// one held is served; then runs `body` with the site and the three.
    func withThreeHeld(
        _ limits: [String: String], refusal: String, _ body: @Sendable (Site, inout [RawConnection]) async throws -> Void
    ) async throws {
        try await Site.with(serverEnvironment: limits.merging(["UNLOCKIT_HTTP_IDLE_TIMEOUT": "3"]) { $1 }) { site in
            // The harness's own pooled connections are closed by the idle timeout first.
            try await Task.sleep(for: .milliseconds(3500))
            var held = try (0..<3).map { _ in try RawConnection(port: site.server.port) }
            try await Task.sleep(for: .milliseconds(200))
            #expect(!held.contains { $0.isClosed })
            let fourth = try RawConnection(port: site.server.port)
            let refused = try #require(fourth.readUntilClosed(limit: .seconds(2)), "\(refusal)")
            #expect(refused.text.isEmpty && refused.after < .seconds(1), "\(refused)")
            // The operations listener counts its own: a scraper from the same address is served.
            #expect(try await site.server.operations.get("/healthz").status == 200)
            // The three it holds are served.
            try held[0].send("GET /api/v1/openapi.json HTTP/1.1\r\nHost: unlockit\r\nConnection: close\r\n\r\n")
            let answer = try #require(held[0].readUntilClosed(limit: .seconds(5)), "no answer on a held connection")
            #expect(answer.text.hasPrefix("HTTP/1.1 200"), "\(answer.text)")
            try await body(site, &held)
        }
    }

    @Test("An admin demoted while their change's body was still arriving changes nothing")
    func aChangeFinishedAfterItsAdminWasDemotedIsRefused() async throws {
        try await Site.with { site in
            let (employeeID, _) = try await site.employee("emp@slow.test", level: 1)
            let created = try await site.api.post(
                "/api/v1/users", token: site.admin,
                ["email": "second@slow.test", "name": "Second", "role": "admin", "securityLevel": 0, "password": "initial password 1"])
            #expect(created.status == 201, "\(created)")
            let second = try await site.api.signIn(email: "second@slow.test", password: "initial password 1", newPassword: "my own password 1")
            let me = try await site.api.get("/api/v1/me", token: site.admin)
            let firstID = try #require((me.json["user"] as? [String: any Sendable])?["id"] as? String)

            // The first admin's change: its head (and session check) now, the rest of its body later.
            let body = #"{"role":"admin"}"#
            let slow = try RawConnection(port: site.server.port)
            try slow.send(
                "PATCH /api/v1/users/\(employeeID) HTTP/1.1\r\nHost: unlockit\r\nAuthorization: Bearer \(site.admin)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body.prefix(5))
            try await Task.sleep(for: .milliseconds(300))
            let demoted = try await site.api.call("PATCH", "/api/v1/users/\(firstID)", token: second, json: ["role": "employee"])
            #expect(demoted.status == 200, "\(demoted)")
            try slow.send(String(body.dropFirst(5)))

            let answer = try #require(slow.readUntilClosed(limit: .seconds(10)), "no answer to the finished request")
            #expect(answer.text.hasPrefix("HTTP/1.1 403"), "\(answer.text)")
            #expect(answer.text.contains("admin_required"), "\(answer.text)")
            let employee = try await site.api.get("/api/v1/users/\(employeeID)", token: second)
            #expect(employee.string("role") == "employee", "\(employee)")
        }
    }
}
