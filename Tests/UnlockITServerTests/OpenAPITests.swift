import Foundation
import HTTPTypes
import Hummingbird
import Testing

@testable import UnlockITServer

/// The OpenAPI document the server serves and the router agree, operation for operation.
@Suite struct OpenAPITests {
    @Test func documentAndRouterAgree() async throws {
        let harness = try Harness()
        try await harness.run { api in
            let reply = try await api.get("/api/v1/openapi.json")
            #expect(reply.status == 200)
            let document = try #require(try JSONSerialization.jsonObject(with: reply.body) as? [String: any Sendable])
            #expect(document["openapi"] as? String == "3.1.0")
            let paths = try #require(document["paths"] as? [String: [String: any Sendable]])
            var documented: Set<String> = []
            for (path, operations) in paths {
                for method in operations.keys { documented.insert("\(method.uppercased()) \(path)") }
            }

            let router = UnlockITApp.buildRouter(services: try harness.services(), brokerReady: { false })
            let routed = Set(
                router.routes.map { route in
                    // Hummingbird writes a parameter as the document does: `{id}`.
                    "\(route.method.rawValue) /\(route.path.components.map(\.description).joined(separator: "/"))"
                })
            #expect(routed.subtracting(documented).isEmpty, "routes missing from the document: \(routed.subtracting(documented).sorted())")
            #expect(documented.subtracting(routed).isEmpty, "documented but not routed: \(documented.subtracting(routed).sorted())")
            #expect(routed.count > 25)
        }
    }

    @Test func theDocsCopyIsTheServedDocument() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        let docs = try Data(contentsOf: root.appendingPathComponent("docs/api/openapi.json"))
        let served = try Data(contentsOf: root.appendingPathComponent("Sources/UnlockITServer/OpenAPI/openapi.json"))
        #expect(docs == served)
    }
}
