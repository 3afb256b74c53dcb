import Foundation
import HTTPTypes
import Hummingbird
import Testing
import UnlockITCore

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
                // A path item's other keys (`servers`) are not operations.
                for method in operations.keys where method != "servers" { documented.insert("\(method.uppercased()) \(path)") }
            }

            // Every operation is on one listener's router, and the document says which: the
            // operations listener's paths name their own server.
            func routes(_ router: Router<AppContext>) -> Set<String> {
                Set(
                    router.routes.map { route in
                        // Hummingbird writes a parameter as the document does: `{id}`.
                        "\(route.method.rawValue) /\(route.path.components.map(\.description).joined(separator: "/"))"
                    })
            }
            let services = try harness.services()
            let apiRoutes = routes(UnlockITApp.buildRouter(services: services))
            let operationsRoutes = routes(UnlockITApp.buildOperationsRouter(services: services, brokerReady: { false }))
            #expect(operationsRoutes == ["GET /healthz", "GET /metrics"])
            #expect(apiRoutes.isDisjoint(with: operationsRoutes), "on both listeners: \(apiRoutes.intersection(operationsRoutes).sorted())")
            let routed = apiRoutes.union(operationsRoutes)
            #expect(routed.subtracting(documented).isEmpty, "routes missing from the document: \(routed.subtracting(documented).sorted())")
            #expect(documented.subtracting(routed).isEmpty, "documented but not routed: \(documented.subtracting(routed).sorted())")
            for (path, item) in paths {
                let servers = (item["servers"] as? [[String: any Sendable]])?.compactMap { $0["url"] as? String }
                let onOperations = operationsRoutes.contains { $0.hasSuffix(" \(path)") }
                let defaults = ServerConfiguration()
                let operationsURL = "http://\(defaults.operationsHost):\(defaults.operationsPort)"
                #expect(servers == (onOperations ? [operationsURL] : nil), "\(path): \(servers ?? [])")
            }
            #expect(apiRoutes.count > 25)
        }
    }

    /// The document's `Name` and `Description` schemas say what the server's checks (``Validation``)
    /// accept, no more and no less, for every code point of the Basic Multilingual Plane, in a name
    /// and in a description, and for the lengths at their bounds. (A client that validates against
    /// the document, or a fuzzer such as `scripts/fuzz-api`, would otherwise send what is refused,
    /// or expect a refusal that does not come.) Beyond the BMP the patterns stay in what every
    /// JSON Schema dialect reads, which cannot name a code point there: the descriptions name the
    /// format characters the server refuses there too. The patterns are read as JSON Schema reads
    /// them (ECMA-262 without the multiline flag): `$` is the end of the text, which ICU writes `\z`.
    @Test func theNameAndDescriptionSchemasAreTheServersChecks() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        let data = try Data(contentsOf: root.appendingPathComponent("Sources/UnlockITServer/OpenAPI/openapi.json"))
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        struct Schema {
            let pattern: NSRegularExpression
            let lengths: ClosedRange<Int>
            func accepts(_ text: String) -> Bool {
                let range = NSRange(text.startIndex..., in: text)
                return lengths.contains(text.unicodeScalars.count) && pattern.firstMatch(in: text, range: range) != nil
            }
        }
        func schema(_ name: String) throws -> Schema {
            let schema = try #require(schemas[name] as? [String: Any])
            var source = try #require(schema["pattern"] as? String)
            if source.hasSuffix("$") { source = String(source.dropLast()) + "\\z" }
            let pattern = try NSRegularExpression(pattern: source)
            return Schema(pattern: pattern, lengths: (schema["minLength"] as? Int ?? 0)...(try #require(schema["maxLength"] as? Int)))
        }
        let checks: [(name: String, schema: Schema, server: (String) -> Bool, maximum: Int)] = [
            ("Name", try schema("Name"), { Validation.name($0) != nil }, 100),
            ("Description", try schema("Description"), { Validation.description($0) != nil }, 1000),
        ]
        for check in checks {
            var disagreements: [String] = []
            for value in 0...0xFFFF {
                guard let scalar = Unicode.Scalar(value) else { continue }
                for text in ["a\(scalar)b", "\(scalar)"] where check.schema.accepts(text) != check.server(text) {
                    disagreements.append("\(text.unicodeScalars.map { "U+" + String($0.value, radix: 16, uppercase: true) })")
                }
            }
            let x = String(repeating: "x", count: check.maximum - 2)
            for text in [
                "", " ", "\u{A0}\u{3000}", x + "yz", x + "xyz", " " + x + "y", " " + x + "yz", "e\u{301}" + x, "e\u{301}" + x + "y",
                "a" + String(repeating: "\u{301}", count: check.maximum), "\u{1F469}\u{200D}\u{1F52C} Lab",
            ] where check.schema.accepts(text) != check.server(text) {
                disagreements.append("\(text.unicodeScalars.count) code points: \(text.prefix(12).debugDescription)")
            }
            #expect(
                disagreements.isEmpty,
                "\(check.name): the schema and the server disagree on \(disagreements.prefix(20)) (\(disagreements.count) in all)")
        }
    }

    /// A client that validates the audit log against the document must know every action and
    /// outcome the server writes, and no other.
    @Test func theAuditEnumsAreTheServers() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        let data = try Data(contentsOf: root.appendingPathComponent("Sources/UnlockITServer/OpenAPI/openapi.json"))
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        func cases(_ name: String) -> [String] { (schemas[name] as? [String: Any])?["enum"] as? [String] ?? [] }
        #expect(Set(cases("AuditAction")) == Set(AuditAction.allCases.map(\.rawValue)))
        #expect(Set(cases("AuditOutcome")) == Set(AuditOutcome.allCases.map(\.rawValue)))
    }

    @Test func theDocsCopyIsTheServedDocument() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        let docs = try Data(contentsOf: root.appendingPathComponent("docs/api/openapi.json"))
        let served = try Data(contentsOf: root.appendingPathComponent("Sources/UnlockITServer/OpenAPI/openapi.json"))
        #expect(docs == served)
    }
}
