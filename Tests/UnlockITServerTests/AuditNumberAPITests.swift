import Foundation
import Testing

@testable import UnlockITServer

/// What one company's audit ids tell it of another's: nothing. Each company's log is numbered 1, 2,
/// 3…, and the paging cursor is such a number.
@Suite struct AuditNumberAPITests {
    @Test("A company's event ids run on without gaps whatever another company did between them, and page by its own numbers")
    func idsSayNothingOfOtherCompanies() async throws {
        try await Harness().runWithTwoCompanies { api, site, _ in
            func ids(_ token: String, _ query: String = "") async throws -> [Int64] {
                try await api.get("/api/v1/audit?limit=1000" + query, token).items.compactMap { ($0["id"] as? NSNumber)?.int64Value }
            }
            let before = try await ids(site.alpha)
            #expect(try #require(before.first) == Int64(before.count), "\(before)")
            #expect(try await api.post("/api/v1/rooms", site.alpha, ["name": "First", "type": "office"]).status == 201)
            for index in 0..<5 {
                #expect(try await api.post("/api/v1/rooms", site.beta, ["name": "Beta \(index)", "type": "office"]).status == 201)
            }
            #expect(try await api.post("/api/v1/rooms", site.alpha, ["name": "Second", "type": "office"]).status == 201)
            let alpha = try await ids(site.alpha)
            #expect(alpha == Array((1...Int64(before.count + 2)).reversed()), "\(alpha)")
            // A cursor from Beta's longer log is, to Alpha, a number no event of its has: the page starts at its newest.
            let beta = try await ids(site.beta)
            #expect(try #require(beta.first) > alpha[0], "\(beta)")
            #expect(try await ids(site.alpha, "&before=\(beta[0])") == alpha)
            let page = try await api.get("/api/v1/audit?limit=2", site.alpha)
            let next = try #require((page.json["nextBefore"] as? NSNumber)?.int64Value)
            #expect(next == alpha[1])
            #expect(try await ids(site.alpha, "&before=\(next)") == Array(alpha.dropFirst(2)))
        }
    }
}
