import Foundation
import Glibc
import SiteHarness
import Testing

/// The server's HTTP connections against clients that go silent or send slowly.
@Suite(.timeLimit(.minutes(2)))
struct HTTPConnectionEndToEndTests {
    /// A plain TCP connection to the server, for writing partial requests.
    final class RawConnection {
        let fd: Int32

        init(port: Int) throws {
            guard let fd = Network.connect(port: port) else { throw HarnessError("connect() failed") }
            self.fd = fd
        }

        deinit { close(fd) }

        func send(_ text: String) throws {
            let bytes = Array(text.utf8)
            guard Glibc.send(fd, bytes, bytes.count, 0) == bytes.count else { throw HarnessError("send() failed") }
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
            try stalled.send("GET /healthz HTTP/1.1\r\nHost: unlockit\r\n")
            let cut = try #require(stalled.readUntilClosed(limit: .seconds(10)), "a half-sent request kept its connection open")
            #expect(cut.after >= .milliseconds(900), "closed after \(cut.after), before the idle timeout")

            // A keep-alive connection whose client has nothing more to ask: answered, then closed.
            let idle = try RawConnection(port: site.server.port)
            try idle.send("GET /healthz HTTP/1.1\r\nHost: unlockit\r\n\r\n")
            let answered = try #require(idle.readUntilClosed(limit: .seconds(10)), "an idle connection was kept open")
            #expect(answered.text.hasPrefix("HTTP/1.1 200"), "\(answered.text)")

            // Requests that keep coming are served as before.
            #expect(try await site.api.get("/healthz").status == 200)
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
