import Foundation
import SiteHarness
import Testing

/// The access rule with real locks: who opens what, and that a denied user causes no challenge.
@Suite(.serialized, .timeLimit(.minutes(10)))
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

    @Test("Sign-in attempts are limited per client; behind a trusted proxy, per address the proxy forwarded")
    func signInsPerClient() async throws {
        let limits = ["UNLOCKIT_SIGN_INS_PER_CLIENT_PER_MINUTE": "3", "UNLOCKIT_TRUSTED_PROXIES": "127.0.0.1"]
        try await Site.with(serverEnvironment: limits) { site in
            func signIn(from client: String, password: String = "not the password") async throws -> APIClient.Reply {
                try await site.api.call(
                    "POST", "/api/v1/auth/sign-in", json: ["email": "operator@site.test", "password": password],
                    headers: ["X-Forwarded-For": "192.0.2.66, \(client)"])
            }
            for _ in 0..<3 { #expect(try await signIn(from: "203.0.113.9").status == 401) }
            let limited = try await signIn(from: "203.0.113.9")
            #expect(limited.status == 429, "\(limited)")
            #expect(limited.code == "too_many_requests")
            // What the client wrote itself (left of the proxy's entry) does not make it another client.
            let spoofed = try await site.api.call(
                "POST", "/api/v1/auth/sign-in", json: ["email": "operator@site.test", "password": "x"],
                headers: ["X-Forwarded-For": "198.51.100.1, 203.0.113.9"])
            #expect(spoofed.status == 429)
            // Another client is not affected.
            #expect(try await signIn(from: "203.0.113.10").status == 401)
            let metrics = try await site.server.operations.get("/metrics").text
            #expect(metrics.contains(#"unlockit_sign_ins_total{outcome="client_limited"} 2"#), "\(metrics)")
        }
    }

    @Test("A user's unlock attempts are limited whatever their outcome; the CLI says so in the user's language")
    func unlocksPerUser() async throws {
        // Two a minute: the next is allowed 30 s after the limit is reached, far beyond this test.
        try await Site.with(serverEnvironment: ["UNLOCKIT_UNLOCKS_PER_USER_PER_MINUTE": "2"], requiredLevel: 0) { site in
            let (lock, _) = try await site.activeLock("lock-rate")
            let eager = try await site.employee("eager@acme.test", level: 1)
            let other = try await site.employee("other@acme.test", level: 1)
            let server = "http://127.0.0.1:\(site.server.port)"
            var people: [CLIEndToEndTests.Person] = []
            for language in ["en", "da"] {
                let person = CLIEndToEndTests.Person(home: "\(site.directory.path)/\(language)-home", language: language)
                let login = try await person.run(
                    ["login", "--server", server, "--email", "eager@acme.test", "--password-stdin"], stdin: ["my own password 1"])
                #expect(login.status == 0, "\(login)")
                people.append(person)
            }

            #expect(try await site.unlock(lock.id, token: eager.token).status == 200)
            let second = try await people[0].run(["unlock", lock.id])
            #expect(second.status == 0, "\(second)")
            let challenges = try await lock.stats()["challenges"]

            let limited = try await site.unlock(lock.id, token: eager.token)
            #expect(limited.status == 429 && limited.code == "too_many_unlocks", "\(limited)")
            let english = try await people[0].run(["unlock", lock.id])
            #expect(english.status == 5 && english.stderr.contains("You have tried to unlock too many times"), "\(english)")
            let danish = try await people[1].run(["unlock", lock.id])
            #expect(danish.status == 5 && danish.stderr.contains("Du har forsøgt at låse op for mange gange"), "\(danish)")
            // The lock never heard of them; someone else still opens it.
            #expect(try await lock.stats()["challenges"] == challenges)
            #expect(try await lock.stats()["openings"] == 2)
            #expect(try await site.unlock(lock.id, token: other.token).status == 200)
            #expect(try await lock.stats()["openings"] == 3)

            // Two granted, then one `rate_limited` for the three turned away.
            let audit = try await site.api.get("/api/v1/audit?action=unlock&user=\(eager.id)", token: site.admin)
            let reasons = audit.items.compactMap { $0["reason"] as? String }
            #expect(reasons == ["rate_limited", "granted", "granted"], "\(audit)")
        }
    }

    @Test("A retired lock can no longer connect or open, its retained status is cleared, and only its company can register it again")
    func retiredLock() async throws {
        try await Site.with(requiredLevel: 0) { site in
            try await site.addSuperuserAccount()
            let (lock, password) = try await site.activeLock("lock-retired")
            #expect(try await site.unlock(lock.id).status == 200)
            #expect(try await site.retainedStatus(of: lock.id) != nil)
            let retired = try await site.api.post("/api/v1/locks/\(lock.id)/retire", token: site.admin)
            #expect(retired.string("state") == "retired")
            #expect(try await site.retainedStatus(of: lock.id) == nil)
            let after = try await site.unlock(lock.id)
            #expect(after.status == 403)
            #expect(after.string("reason") == "lock_inactive")
            // Its broker account is gone: the broker refuses it.
            await lock.stop()
            let again = try await lock.start(broker: site.broker.url, password: password, waitForConnection: false)
            try await again.waitForLine(containing: "refused the connection")
            await lock.stop()

            // Another company cannot take the device id over.
            let (other, otherRoomID) = try await site.otherCompany("Other", room: "Theirs", requiredLevel: 0)
            let taken = try await site.api.post("/api/v1/locks", token: other, ["id": lock.id, "name": "Theirs", "roomId": otherRoomID])
            #expect(taken.status == 409 && taken.code == "lock_id_taken", "\(taken)")

            // Its own company registers it again once the device is factory reset: a new broker
            // password, a new pairing, and the door opens again.
            try await lock.factoryReset()
            let registered = try await site.api.post(
                "/api/v1/locks", token: site.admin, ["id": lock.id, "name": "Back in service", "roomId": site.roomID])
            #expect(registered.status == 201, "\(registered)")
            // Nothing of the device's earlier life shows: not online, never seen, no firmware known.
            let fresh = try #require(registered.json["lock"] as? [String: any Sendable])
            #expect(fresh["state"] as? String == "registered" && fresh["online"] as? Bool == false, "\(fresh)")
            #expect(fresh["lastSeen"] == nil && fresh["firmwareVersion"] == nil && fresh["retiredAt"] == nil, "\(fresh)")
            #expect(try await site.retainedStatus(of: lock.id) == nil)
            let newPassword = try #require((registered.json["mqtt"] as? [String: any Sendable])?["password"] as? String)
            #expect(newPassword != password)
            try await lock.start(broker: site.broker.url, password: newPassword, pairing: true)
            try await site.waitUntilOnline(lock.id)
            let activated = try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: site.admin, ["setupCode": lock.setupCode])
            #expect(activated.status == 200 && activated.string("state") == "active", "\(activated)")
            #expect(try await site.unlock(lock.id).status == 200)
            let events = try await site.api.get("/api/v1/audit?lock=\(lock.id)&action=register_lock", token: site.admin)
            #expect(events.items.count == 2, "\(events)")
            // The newest first: the take-over, with the name the retired lock had.
            let changes = events.items.first?["changes"] as? [[String: any Sendable]] ?? []
            #expect(changes.contains { $0["field"] as? String == "name" && $0["from"] as? String == "Door \(lock.id)" }, "\(events)")
        }
    }
}
