import Foundation
import Glibc
import SiteHarness
import Testing

/// `/healthz` and `/metrics` span every company and answer without a session: they have a listener
/// of their own, and the API's address, which faces the world, does not know them.
@Suite struct OperationsListenerEndToEndTests {
    @Test("/healthz and /metrics answer on the operations listener alone; neither listener serves the other's routes")
    func operationsHaveTheirOwnListener() async throws {
        try await Site.with { site in
            let operations = site.server.operations

            let health = try await operations.get("/healthz")
            #expect(health.status == 200, "\(health)")
            #expect(health.string("status") == "ok" && health.string("broker") == "connected", "\(health)")
            #expect(try await operations.call("HEAD", "/healthz").status == 200)
            // The site's admin signed in: the API's requests are counted here, not answered there.
            let metrics = try await operations.get("/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.text.contains(#"unlockit_sign_ins_total{outcome="success"}"#), "\(metrics.text.prefix(2000))")

            for path in ["/healthz", "/metrics"] {
                for method in ["GET", "HEAD"] {
                    let reply = try await site.api.call(method, path)
                    #expect(reply.status == 404, "\(method) \(path) on the API's address: \(reply)")
                    if method == "GET" { #expect(reply.code == "route_not_found") }
                }
                // Not even for a signed-in admin: a session of one company sees no other's figures.
                #expect(try await site.api.get(path, token: site.admin).status == 404)
            }

            // The operations listener has nothing of the API: no sign-in to guess passwords at.
            let signIn = try await operations.post("/api/v1/auth/sign-in", ["email": "operator@site.test", "password": "admin password Site"])
            #expect(signIn.status == 404 && signIn.code == "route_not_found", "\(signIn)")
            #expect(try await operations.get("/api/v1/openapi.json").status == 404)
            #expect(try await operations.get("/api/v1/users", token: site.admin).status == 404)
            #expect(try await site.api.get("/api/v1/openapi.json").status == 200)

            // Each listener's requests are counted apart: the API's no-route probes are not the scraper's.
            let counted = try await operations.get("/metrics").text.split(separator: "\n").filter {
                $0.hasPrefix("unlockit_http_requests_total{") && $0.contains(#"route="NotFound""#) && $0.contains(#"status="404""#)
            }
            for (listener, method, count) in [("api", "GET", 4), ("api", "HEAD", 2), ("operations", "POST", 1), ("operations", "GET", 2)] {
                let line = counted.first { $0.contains(#"listener="\#(listener)""#) && $0.contains(#"method="\#(method)""#) }
                #expect(line?.hasSuffix(" \(count)") == true, "\(listener) \(method): \(counted)")
            }
            #expect(try await operations.get("/metrics").text.contains(#"listener="operations",method="GET",route="/metrics",status="200""#))

            // The server's log names both addresses.
            let listening = site.server.process.output.filter { $0.contains("unlockit-server listening") }
            #expect(listening.contains { $0.contains("listener=api") && $0.contains(":\(site.server.port)") }, "\(listening)")
            #expect(
                listening.contains { $0.contains("listener=operations") && $0.contains(":\(site.server.operationsPort)") }, "\(listening)")
        }
    }

    @Test("On SIGTERM /healthz answers 503 shutting_down at once, while the API finishes the request it has")
    func healthSaysShuttingDownFirst() async throws {
        try await Site.with { site in
            // A request whose body is still arriving keeps the API's listener draining.
            let body = #"{"name":"Renamed"}"#
            let slow = try HTTPConnectionEndToEndTests.RawConnection(port: site.server.port)
            try slow.send(
                "PATCH /api/v1/rooms/\(site.roomID) HTTP/1.1\r\nHost: unlockit\r\nAuthorization: Bearer \(site.admin)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body.prefix(5))
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await site.server.operations.get("/healthz").status == 200)

            site.server.process.signal(SIGTERM)
            try await Network.waitUntil("/healthz to say the server is shutting down", timeout: .seconds(20)) {
                guard let health = try? await site.server.operations.get("/healthz") else { return false }
                return health.status == 503 && health.string("status") == "shutting_down"
            }

            // The request it had is answered, and then the server ends cleanly.
            try slow.send(String(body.dropFirst(5)))
            let answer = try #require(slow.readUntilClosed(limit: .seconds(10)), "no answer to the request in flight")
            #expect(answer.text.hasPrefix("HTTP/1.1 200"), "\(answer.text)")
            #expect(try await site.server.process.waitForExit(timeout: .seconds(30)) == 0)
        }
    }
}
