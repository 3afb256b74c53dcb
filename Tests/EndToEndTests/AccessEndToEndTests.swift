import Foundation
import SiteHarness
import Testing

/// The access rule with real locks: who opens what, and that a denied user causes no challenge.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct AccessEndToEndTests {
    @Test("Enough level opens; the room's list opens despite a low level; neither is denied with no challenge sent")
    func employeesAndRooms() async throws {
        try await Site.with(requiredLevel: 3) { site in
            let (lock, _) = try await site.activeLock("lock-employees")
            let cleared = try await site.employee("cleared@acme.test", level: 3)
            let listed = try await site.employee("listed@acme.test", level: 0)
            let stranger = try await site.employee("stranger@acme.test", level: 2)
            let added = try await site.api.call("PUT", "/api/v1/rooms/\(site.roomID)/authorized-users/\(listed.id)", token: site.admin)
            #expect(added.status == 200)

            #expect(try await site.unlock(lock.id, token: cleared.token).status == 200)
            #expect(try await site.unlock(lock.id, token: listed.token).status == 200)
            let challengesBefore = try await lock.stats()["challenges"]

            let denied = try await site.unlock(lock.id, token: stranger.token)
            #expect(denied.status == 403)
            #expect(denied.code == "access_denied")
            #expect(denied.string("reason") == "level_too_low")
            // The lock never heard of it.
            #expect(try await lock.stats()["challenges"] == challengesBefore)
            #expect(try await lock.stats()["openings"] == 2)

            // "What can I open, and why": the stranger sees the lock and the reason.
            let access = try await site.api.get("/api/v1/me/access", token: stranger.token)
            #expect(access.items.first?["allowed"] as? Bool == false)
            #expect(access.items.first?["reason"] as? String == "level_too_low")

            // Every attempt is in the audit log, with who, which lock and why.
            let audit = try await site.api.get("/api/v1/audit?action=unlock&lock=\(lock.id)", token: site.admin)
            let byActor = Dictionary(grouping: audit.items) { $0["actorId"] as? String ?? "" }
            #expect(byActor[cleared.id]?.first?["outcome"] as? String == "success")
            #expect(byActor[listed.id]?.first?["reason"] as? String == "granted")
            #expect(byActor[stranger.id]?.first?["outcome"] as? String == "denied")
            #expect(byActor[stranger.id]?.first?["reason"] as? String == "level_too_low")
            #expect(audit.items.count == 3)
        }
    }

    @Test("A retired lock can no longer connect or open")
    func retiredLock() async throws {
        try await Site.with(requiredLevel: 0) { site in
            let (lock, password) = try await site.activeLock("lock-retired")
            #expect(try await site.unlock(lock.id).status == 200)
            let retired = try await site.api.post("/api/v1/locks/\(lock.id)/retire", token: site.admin)
            #expect(retired.string("state") == "retired")
            let after = try await site.unlock(lock.id)
            #expect(after.status == 403)
            #expect(after.string("reason") == "lock_inactive")
            // Its broker account is gone: the broker refuses it.
            await lock.stop()
            let again = try await lock.start(broker: site.broker.url, password: password, waitForConnection: false)
            try await again.waitForLine(containing: "refused the connection")
        }
    }
}
