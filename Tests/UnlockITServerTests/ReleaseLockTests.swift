import Foundation
import GRDB
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

/// The operator's release of a disputed device id (``SQLiteStore/releaseLock(_:from:reservingFor:at:)``,
/// `unlockit-server release-lock`): only the holder named loses its lock, and an id released to a
/// company is kept for it, as a registration not in service would be, until it registers the id.
@Suite struct ReleaseLockTests {
    static let lapse = 3600

    @Test("Released to a company, an id is kept from every other (its holder too) for the lapse, then free; the company takes it up")
    func anIDReleasedToACompanyIsKeptForIt() async throws {
        let harness = try Harness { $0.lockIDLapse = Self.lapse }
        try await harness.runWithTwoCompanies { api, site, _ in
            func company(_ token: String) async throws -> CompanyID {
                try #require((try await api.get("/api/v1/me", token).json["company"] as? [String: any Sendable])?["id"] as? String).flatMap(
                    CompanyID.init)!
            }
            let (alpha, beta) = (try await company(site.alpha), try await company(site.beta))
            func register(_ token: String, _ room: String, _ id: String) async throws -> API.Reply {
                try await api.post("/api/v1/locks", token, ["id": id, "name": "Door", "roomId": room])
            }
            func reservations() throws -> Int {
                try DatabaseQueue(path: harness.configuration.databasePath).read { db in
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM lockIDReservation") ?? 0
                }
            }
            for id in ["lock-kept", "lock-taken-up", "lock-freed"] { #expect(try await register(site.beta, site.betaRoom, id).status == 201) }

            // Only the holder named loses its lock.
            #expect(try await harness.store.releaseLock(LockID("lock-kept")!, from: alpha, reservingFor: alpha, at: harness.clock.now) == nil)
            #expect(try await api.get("/api/v1/locks/lock-kept", site.beta).status == 200)
            for id in ["lock-kept", "lock-taken-up"] {
                let released = try await harness.store.releaseLock(LockID(id)!, from: beta, reservingFor: alpha, at: harness.clock.now)
                #expect(released?.companyID == beta && released?.id.rawValue == id)
            }
            // Released to no company: free, and no company's log but Beta's hears of it.
            #expect(try await harness.store.releaseLock(LockID("lock-freed")!, from: beta, reservingFor: nil, at: harness.clock.now) != nil)
            #expect(try reservations() == 2)
            // Alpha's log says which ids are kept for it, naming neither Beta nor its lock (the room is Beta's); Beta's has only its releases.
            let kept = try await api.get("/api/v1/audit?action=reserve_lock_id", site.alpha).items
            #expect(kept.compactMap { $0["lockId"] as? String }.sorted() == ["lock-kept", "lock-taken-up"], "\(kept)")
            for event in kept {
                #expect(event["reason"] as? String == "released_to_company" && event["outcome"] as? String == "success", "\(event)")
                #expect(event["actorId"] == nil && event["roomId"] == nil, "\(event)")
            }
            #expect(try await api.get("/api/v1/audit?action=reserve_lock_id", site.beta).items.isEmpty)
            #expect(try await api.get("/api/v1/audit?action=release_lock", site.beta).items.count == 3)

            // Beta cannot register them again first (told as of another company's id, which counts); Alpha takes one up.
            let lapsedBefore = harness.clock.now.addingTimeInterval(-TimeInterval(Self.lapse))
            #expect(try await harness.store.lockIDHolder(LockID("lock-kept")!, for: beta, lapsedBefore: lapsedBefore) == .otherCompany)
            #expect(try await harness.store.lockIDHolder(LockID("lock-kept")!, for: alpha, lapsedBefore: lapsedBefore) == nil)
            #expect(try await register(site.beta, site.betaRoom, "lock-kept").code == "lock_id_taken")
            harness.clock.advance(100)
            #expect(try await register(site.alpha, site.alphaRoom, "lock-taken-up").status == 201)
            #expect(try reservations() == 1)

            // The lapse counts from the release, for both: at its end the ids are kept still, a moment
            // later they are free again for any company (Alpha's registration, never activated, too).
            harness.clock.advance(TimeInterval(Self.lapse - 100))
            let betaAgain = try await api.session("admin@beta.test", "a brand new password")  // the old session expired
            for id in ["lock-kept", "lock-taken-up"] { #expect(try await register(betaAgain, site.betaRoom, id).code == "lock_id_taken", "\(id)") }
            harness.clock.advance(0.001)
            for id in ["lock-kept", "lock-taken-up"] { #expect(try await register(betaAgain, site.betaRoom, id).status == 201, "\(id)") }
            #expect(try reservations() == 0)
        }
    }
}
