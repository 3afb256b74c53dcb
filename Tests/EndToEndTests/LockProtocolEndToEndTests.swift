import Foundation
import GRDB
import LockProtocol
import MQTT
import SiteHarness
import Testing
import UnlockITCore

/// The lock protocol end to end: a real mosquitto, a real server process and real lock processes.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct LockProtocolEndToEndTests {
    @Test("Activation: a wrong code is refused and leaves the lock pairable; pairing mode and re-activation are enforced")
    func activation() async throws {
        try await Site.with() { site in

            // Not in pairing mode: the lock refuses, nothing is stored.
            let (lock, password) = try await site.registerLock("lock-activation")
            let process = try await lock.start(broker: site.broker.url, password: password, pairing: false)
            try await site.waitUntilOnline(lock.id)
            let notPairing = try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: site.admin, ["setupCode": lock.setupCode])
            #expect(notPairing.status == 409)
            #expect(notPairing.code == "not_in_pairing_mode")

            // The pairing button (SIGUSR1), then a wrong setup code: a clear error, still registered.
            process.signal(SIGUSR1)
            try await process.waitForLine(containing: "pairing mode on")
            let wrong = try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: site.admin, ["setupCode": "AAAA-BBBB-CCCC-DDDD"])
            #expect(wrong.status == 422)
            #expect(wrong.code == "setup_code_mismatch")
            #expect(try await site.api.get("/api/v1/locks/\(lock.id)", token: site.admin).string("state") == "registered")

            // The right code still works afterwards.
            let right = try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: site.admin, ["setupCode": lock.setupCode])
            #expect(right.status == 200)
            #expect(right.string("state") == "active")
            try await process.waitForLine(containing: "activated")

            // Once activated, the lock refuses to pair again, even with the right code.
            let again = try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: site.admin, ["setupCode": lock.setupCode])
            #expect(again.status == 409)
            #expect(again.code == "already_activated")

            // The audit log has every attempt with its reason.
            let audit = try await site.api.get("/api/v1/audit?action=activate_lock", token: site.admin)
            let reasons = audit.items.compactMap { $0["reason"] as? String }
            #expect(reasons.contains("not_in_pairing_mode"))
            #expect(reasons.contains("setup_code_mismatch"))
            #expect(reasons.contains("already_activated"))
            #expect(audit.items.contains { ($0["outcome"] as? String) == "success" })
        }
    }

    @Test("Activation the lock cannot write to its flash is undone on both sides; it pairs once the flash works")
    func activationWithoutFlash() async throws {
        try await Site.with() { site in
            let (lock, password) = try await site.registerLock("lock-no-flash")
            let process = try await lock.start(broker: site.broker.url, password: password, pairing: true)
            try await site.waitUntilOnline(lock.id)
            // The flash is written through a temporary file; a folder in its place makes the write fail.
            let blocker = lock.statePath + ".tmp"
            try FileManager.default.createDirectory(atPath: blocker, withIntermediateDirectories: false)
            let failed = try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: site.admin, ["setupCode": lock.setupCode])
            #expect(failed.status == 502, "\(failed)")
            #expect(failed.code == "lock_denied")
            #expect(try await site.api.get("/api/v1/locks/\(lock.id)", token: site.admin).string("state") == "registered")
            let flash = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: lock.statePath))) as? [String: Any]
            #expect(flash?["activated"] as? Bool == false)

            // Flash repaired, pairing button pressed: the lock pairs (no factory reset needed).
            try FileManager.default.removeItem(atPath: blocker)
            process.signal(SIGUSR1)
            try await process.waitForLine(containing: "pairing mode on")
            let right = try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: site.admin, ["setupCode": lock.setupCode])
            #expect(right.status == 200, "\(right)")
            #expect(right.string("state") == "active")
            let stored = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: lock.statePath))) as? [String: Any]
            #expect(stored?["activated"] as? Bool == true)
        }
    }

    @Test("Activation whose answer comes too late is finished by the next attempt, with the right code only")
    func activationAnswerLost() async throws {
        // The server waits 3 × 1 s for an activation; the lock's flash takes 4 s to write, so the
        // lock commits and answers after the server has given up.
        try await Site.with(serverEnvironment: ["UNLOCKIT_UNLOCK_TIMEOUT": "1"]) { site in
            let (lock, password) = try await site.registerLock("lock-slow-flash")
            let process = try await lock.start(broker: site.broker.url, password: password, pairing: true, arguments: ["--flash-write-time", "4"])
            try await site.waitUntilOnline(lock.id)
            let late = try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: site.admin, ["setupCode": lock.setupCode])
            #expect(late.status == 504, "\(late)")
            #expect(late.code == "lock_timeout")
            #expect(try await site.api.get("/api/v1/locks/\(lock.id)", token: site.admin).string("state") == "registered")
            try await process.waitForLine(containing: "] activated")

            // The lock is activated and out of pairing mode. A wrong code does not finish the pairing…
            let wrong = try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: site.admin, ["setupCode": "AAAA-BBBB-CCCC-DDDD"])
            #expect(wrong.status == 422, "\(wrong)")
            #expect(wrong.code == "setup_code_mismatch")
            // …the right one does, without a factory reset and without opening the door.
            let again = try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: site.admin, ["setupCode": lock.setupCode])
            #expect(again.status == 200, "\(again)")
            #expect(again.string("state") == "active")
            #expect(try await lock.stats()["openings"] == 0)

            // The key the server finished with is the lock's: an unlock opens the door.
            try await site.authorizeAdmin()
            let unlock = try await site.unlock(lock.id)
            #expect(unlock.status == 200, "\(unlock)")
            #expect(try await lock.stats()["openings"] == 1)

            let audit = try await site.api.get("/api/v1/audit?action=activate_lock", token: site.admin)
            let reasons = audit.items.compactMap { $0["reason"] as? String }
            #expect(reasons.contains("lock_timeout"))
            #expect(reasons.contains("setup_code_mismatch"))
            #expect(audit.items.contains { ($0["outcome"] as? String) == "success" })
        }
    }

    @Test("An admin signed out while a lock pairs gets no activation, the log says why, and the next attempt finishes it")
    func activationByAnAdminWhoseSessionEnded() async throws {
        try await Site.with() { site in
            let (lock, password) = try await site.registerLock("lock-signed-out")
            // The lock takes 2 s to write its key to flash: time to sign the admin out meanwhile.
            _ = try await lock.start(broker: site.broker.url, password: password, pairing: true, arguments: ["--flash-write-time", "2"])
            try await site.waitUntilOnline(lock.id)
            let other = try await site.api.signIn(email: "operator@site.test", password: "admin password Site")
            async let reply = site.api.post("/api/v1/locks/\(lock.id)/activate", token: site.admin, ["setupCode": lock.setupCode])
            try await Task.sleep(for: .milliseconds(700))
            #expect(try await site.api.post("/api/v1/auth/sign-out", token: site.admin).status == 204)
            let answer = try await reply
            #expect(answer.status == 401 && answer.string("code") == "unauthenticated", "\(answer)")
            #expect(try await site.api.get("/api/v1/locks/\(lock.id)", token: other).string("state") == "registered")
            let audit = try await site.api.get("/api/v1/audit?action=activate_lock", token: other)
            #expect(audit.items.map { $0["reason"] as? String } == ["admin_session_ended"], "\(audit.items)")
            #expect(audit.items.first?["outcome"] as? String == "denied")
            // An admin still signed in finishes the pairing: the lock holds the key it was given.
            let again = try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: other, ["setupCode": lock.setupCode])
            #expect(again.status == 200 && again.string("state") == "active", "\(again)")
        }
    }

    @Test("Unlock: granted, the relay opens and re-locks, the state events arrive; commands and events travel at QoS 0")
    func unlockGranted() async throws {
        try await Site.with() { site in
            try await site.addSuperuserAccount()
            let (lock, _) = try await site.activeLock("lock-unlock", arguments: ["--open-time", "0.5"])
            try await site.authorizeAdmin()
            // The watcher subscribes at QoS 1, so each message reaches it at the QoS it was published with.
            let watcher = try await site.superuser()
            let events = try await watcher.record(Topics.event(LockID(lock.id)!), Topics.command(LockID(lock.id)!))

            let reply = try await site.unlock(lock.id)
            #expect(reply.status == 200)
            #expect(reply.json["granted"] as? Bool == true)
            try await lock.process!.waitForLine(containing: "relay unlocked")
            try await lock.process!.waitForLine(containing: "relay locked")
            _ = try await events.waitFor("state unlocked") { $0.contains(#""op":"state""#) && $0.contains("unlocked") }
            _ = try await events.waitFor("state locked") { $0.contains(#""op":"state""#) && $0.contains(#""state":"locked""#) }
            #expect(try await lock.stats()["openings"] == 1)
            let ops = ["challenge", "nonce", "respond", "result", "state"]
            #expect(ops.allSatisfy { op in events.payloads.contains { $0.contains(#""op":"\#(op)""#) } })
            #expect(events.messages.allSatisfy { $0.qos == .atMostOnce }, "\(events.messages.map { ($0.topic, $0.qos) })")
            await watcher.shutdown()
        }
    }

    @Test("Unlocks of one door at once: each gets a challenge of its own after the last respond, and every one opens")
    func unlocksOfOneDoorAtOnce() async throws {
        try await Site.with() { site in
            try await site.addSuperuserAccount()
            let (lock, _) = try await site.activeLock("lock-rush")
            try await site.authorizeAdmin()
            let watcher = try await site.superuser()
            let commands = try await watcher.record(Topics.command(LockID(lock.id)!))

            let before = try await lock.stats()  // activation asked one challenge
            let count = 8
            let replies = try await withThrowingTaskGroup(of: APIClient.Reply.self) { group in
                for _ in 0..<count { group.addTask { try await site.unlock(lock.id) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(replies.allSatisfy { $0.status == 200 && $0.json["granted"] as? Bool == true }, "\(replies)")
            let stats = try await lock.stats()
            #expect(stats["openings"] == count)
            #expect(stats["challenges"].map { $0 - (before["challenges"] ?? 0) } == count)
            #expect(stats["denials"] == 0)
            // The lock keeps one pending challenge: on its topic a challenge always follows a respond.
            try await Network.waitUntil("every respond seen", timeout: .seconds(5)) {
                commands.payloads.filter { $0.contains(#""op":"respond""#) }.count == count
            }
            let ops = commands.payloads.map {
                $0.contains(#""op":"challenge""#) ? "challenge" : $0.contains(#""op":"respond""#) ? "respond" : "other"
            }
            #expect(ops == Array(repeating: ["challenge", "respond"], count: count).flatMap { $0 }, "\(ops)")
            await watcher.shutdown()
        }
    }

    @Test("A lock that opens after the client was told lock_timeout is in the audit log")
    func lateGrantIsAudited() async throws {
        try await Site.with(serverEnvironment: ["UNLOCKIT_UNLOCK_TIMEOUT": "1"]) { site in
            try await site.addSuperuserAccount()
            let (lock, _) = try await site.activeLock("lock-late")
            try await site.authorizeAdmin()
            let lockID = LockID(lock.id)!
            // The lock's firmware hangs with its connection up; a stand-in answers on its topic, slowly.
            let firmware = try #require(lock.process)
            try await firmware.suspend()
            defer { firmware.resume() }
            let standIn = try await site.superuser("stand-in")
            let wire = try await standIn.record(Topics.command(lockID))
            async let reply = site.unlock(lock.id)
            let challenge = try await wire.waitFor("a challenge") { $0.contains(#""op":"challenge""#) }
            guard case .challenge(let req) = try Command.decode(Array(challenge.utf8)) else { throw HarnessError("not a challenge") }
            try standIn.publish(topic: Topics.event(lockID), payload: Event.nonce(req: req, nonce: .random()).encoded())
            _ = try await wire.waitFor("the respond") { $0.contains(#""op":"respond""#) }
            let answer = try await reply
            #expect(answer.status == 504, "\(answer)")
            #expect(answer.code == "lock_timeout")

            // The result comes after the server's answer: the door opened, and the log says so.
            try standIn.publish(topic: Topics.event(lockID), payload: Event.result(req: req, granted: true, reason: nil).encoded())
            try await Network.waitUntil("the late opening in the audit log") {
                let audit = try await site.api.get("/api/v1/audit?action=unlock", token: site.admin)
                return audit.items.contains { ($0["reason"] as? String) == "granted_late" && ($0["outcome"] as? String) == "success" }
            }
            let reasons = try await site.api.get("/api/v1/audit?action=unlock", token: site.admin).items.compactMap { $0["reason"] as? String }
            #expect(reasons.sorted() == ["granted_late", "lock_timeout"])
            await standIn.shutdown()
        }
    }

    @Test("Replay: a captured respond, a late respond and a duplicate delivery open nothing")
    func replay() async throws {
        try await Site.with() { site in
            try await site.addSuperuserAccount()
            let (lock, _) = try await site.activeLock("lock-replay", arguments: ["--challenge-lifetime", "1", "--open-time", "0.2"])
            try await site.authorizeAdmin()
            let lockID = LockID(lock.id)!
            let attacker = try await site.superuser("attacker")
            let wire = try await attacker.record(Topics.command(lockID), Topics.event(lockID))

            // A legitimate unlock; the attacker captures the respond off the wire and sends it again.
            #expect(try await site.unlock(lock.id).status == 200)
            let captured = try await wire.waitFor("a respond on the wire") { $0.contains(#""op":"respond""#) }
            try attacker.publish(topic: Topics.command(lockID), payload: Array(captured.utf8))
            _ = try await wire.waitFor("the replay's denial") { $0.contains("no_pending_challenge") }
            #expect(try await lock.stats()["openings"] == 1)

            // A correct response that arrives after the challenge expired is denied.
            let key = Key128(try lock.deviceKey())!
            let req = RequestID("late-respond")!
            try attacker.publish(topic: Topics.command(lockID), payload: Command.challenge(req: req).encoded())
            let nonceMessage = try await wire.waitFor("the nonce") { $0.contains("late-respond") && $0.contains(#""op":"nonce""#) }
            guard case .nonce(_, let nonce) = try Event.decode(Array(nonceMessage.utf8)) else {
                Issue.record("not a nonce: \(nonceMessage)")
                return
            }
            try await Task.sleep(for: .milliseconds(1300))
            let late = Command.respond(req: req, response: ChallengeResponse.compute(nonce: nonce, key: key)).encoded()
            try attacker.publish(topic: Topics.command(lockID), payload: late)
            _ = try await wire.waitFor("the expiry denial") { $0.contains("late-respond") && $0.contains("expired") }
            #expect(try await lock.stats()["openings"] == 1)

            // A duplicate delivery of a fresh, correct respond (as QoS 1 may redeliver) opens once.
            let fresh = RequestID("duplicate")!
            try attacker.publish(topic: Topics.command(lockID), payload: Command.challenge(req: fresh).encoded())
            let freshNonce = try await wire.waitFor("the second nonce") { $0.contains("duplicate") && $0.contains(#""op":"nonce""#) }
            guard case .nonce(_, let nonce2) = try Event.decode(Array(freshNonce.utf8)) else {
                Issue.record("not the answer the protocol gives here"); return
            }
            let respond = Command.respond(req: fresh, response: ChallengeResponse.compute(nonce: nonce2, key: key)).encoded()
            try attacker.publish(topic: Topics.command(lockID), payload: respond)
            try attacker.publish(topic: Topics.command(lockID), payload: respond)
            _ = try await wire.waitFor("the duplicate's denial") { $0.contains("duplicate") && $0.contains("no_pending_challenge") }
            let results = wire.payloads(on: Topics.event(lockID)).filter { $0.contains(#""req":"duplicate""#) && $0.contains(#""op":"result""#) }
            #expect(results.count == 2)
            #expect(results.filter { $0.contains(#""granted":true"#) }.count == 1)
            #expect(try await lock.stats()["openings"] == 2)
            await attacker.shutdown()
        }
    }

    @Test("Broker ACL: a lock reaches only its own topics, and a wrong password is refused")
    func brokerACL() async throws {
        try await Site.with() { site in
            try await site.addSuperuserAccount()
            let (lockA, passwordA) = try await site.registerLock("lock-acl-a")
            let (lockB, _) = try await site.registerLock("lock-acl-b")
            let b = LockID(lockB.id)!
            let observer = try await site.superuser("observer")
            let seen = try await observer.record(Topics.event(b), Topics.status(b), Topics.command(b))

            let impostor = try MQTTClient(
                configuration: MQTTClientConfiguration(
                    host: "127.0.0.1", port: site.broker.port, clientID: lockA.id, username: lockA.id, password: passwordA))
            impostor.start()
            try await impostor.waitUntilConnected(timeout: .seconds(30))
            // Its own command topic: allowed. Another lock's: refused by the broker.
            try await impostor.subscribe(Topics.command(LockID(lockA.id)!))
            await #expect(throws: MQTTError.subscriptionRefused(Topics.command(b))) { try await impostor.subscribe(Topics.command(b)) }
            // Nor does a wildcard reach anyone else's: not every lock's commands, not everything.
            for wildcard in [Topics.allCommands, Topics.allEvents, Topics.root + "/#", "#"] {
                await #expect(throws: MQTTError.subscriptionRefused(wildcard)) { try await impostor.subscribe(wildcard) }
            }
            // Publishing as lock B, or as the server to lock B, is dropped by the broker: the observer
            // never sees it. Not even a retained "online" status for B.
            try impostor.publish(topic: Topics.event(b), payload: Event.state(.unlocked).encoded())
            try impostor.publish(topic: Topics.status(b), payload: Array(#"{"online":true}"#.utf8), retain: true)
            try impostor.publish(topic: Topics.command(b), payload: Command.challenge(req: RequestID.random()).encoded())
            try impostor.publish(topic: Topics.event(LockID(lockA.id)!), payload: Event.state(.unlocked).encoded())
            try await Task.sleep(for: .milliseconds(500))
            #expect(seen.messages.isEmpty)
            await impostor.shutdown()

            // A wrong password is refused with "not authorised" (CONNACK 5).
            try await site.waitUntilRefused(lock: lockA.id, password: "wrong")
            await observer.shutdown()
        }
    }

    @Test("The broker disconnects a lock that sends more than any protocol message holds; the server never gets it")
    func oversizedMessagesAreRefusedByTheBroker() async throws {
        try await Site.with() { site in
            try await site.addSuperuserAccount()
            let (lock, password) = try await site.registerLock("lock-big")
            let id = LockID(lock.id)!
            let observer = try await site.superuser("observer")
            let seen = try await observer.record(Topics.event(id))
            let (device, events) = try await site.device(lock.id, password: password)
            // The protocol's largest message gets through; 20 KB does not, and costs the connection.
            try device.publish(topic: Topics.event(id), payload: Array(repeating: UInt8(ascii: "x"), count: 4096))
            try await Network.waitUntil("the 4 KiB message") { seen.messages.count == 1 }
            try device.publish(topic: Topics.event(id), payload: Array(repeating: UInt8(ascii: "y"), count: 20_000))
            try await Network.waitUntil("the broker's disconnection") { events.get().contains(.disconnected) }
            try await Task.sleep(for: .milliseconds(300))
            #expect(seen.messages.count == 1 && seen.messages.allSatisfy { $0.payload.count == 4096 })
            await device.shutdown()
            await observer.shutdown()
        }
    }

    @Test("A lock's account that sends more than its budget unasked is shut off; a busy door is not, and a new password brings it back")
    func aFloodingLockIsShutOff() async throws {
        try await Site.with(serverEnvironment: ["UNLOCKIT_LOCK_MESSAGES_PER_MINUTE": "30"]) { site in
            let (kept, _) = try await site.activeLock("lock-kept")
            // Forty unlocks within the minute: 160 messages, but the lock's answers were asked for.
            try await site.authorizeAdmin()
            for _ in 0..<40 {
                let opened = try await site.unlock(kept.id)
                #expect(opened.status == 200 && opened.json["granted"] as? Bool == true, "\(opened)")
            }
            let (flooding, password) = try await site.registerLock("lock-flood")
            let id = LockID(flooding.id)!
            let (device, events) = try await site.device(flooding.id, password: password)
            // Relay states, which no one asked for, as fast as it can.
            for _ in 0..<200 where device.isConnected {
                try? device.publish(topic: Topics.event(id), payload: Event.state(.locked).encoded())
            }
            try await Network.waitUntil("the broker's disconnection") { events.get().contains(.disconnected) }
            await device.shutdown()
            try await site.waitUntilRefused(lock: flooding.id, password: password)

            let audit = try await site.api.get("/api/v1/audit?lock=lock-flood", token: site.admin).items
            let shutOff = audit.filter { $0["action"] as? String == "reset_lock_password" }
            #expect(shutOff.count == 1 && shutOff.first?["reason"] as? String == "message_flood", "\(audit)")
            #expect(shutOff.first?["actorId"] == nil, "\(audit)")
            try await site.waitUntilOnline(flooding.id, false)

            // Every other lock's budget is its own, and the busy door's answers spent none of it.
            let opened = try await site.unlock(kept.id)
            #expect(opened.status == 200 && opened.json["granted"] as? Bool == true, "\(opened)")
            let keptEvents = try await site.api.get("/api/v1/audit?lock=lock-kept&action=reset_lock_password", token: site.admin).items
            #expect(keptEvents.isEmpty, "\(keptEvents)")

            // An admin's new password brings the device back.
            let reset = try await site.api.post("/api/v1/locks/lock-flood/broker-password", token: site.admin)
            let newPassword = try #require((reset.json["mqtt"] as? [String: any Sendable])?["password"] as? String, "\(reset)")
            try await flooding.start(broker: site.brokerURL, password: newPassword, pairing: true)
            try await site.waitUntilOnline(flooding.id)
        }
    }

    @Test("A device id naming another broker account is refused and that account keeps working; a lock's stale account is replaced")
    func deviceIDOfAnotherAccount() async throws {
        try await Site.with(serverEnvironment: ["UNLOCKIT_TAKEN_LOCK_IDS_PER_DAY": "3"]) { site in
            try await site.addSuperuserAccount()
            let (lock, _) = try await site.activeLock("lock-kept")
            try await site.authorizeAdmin()
            // The server's own account and the superuser's: both names are valid device ids.
            for name in [site.broker.serverUsername, "tester"] {
                let reply = try await site.api.post("/api/v1/locks", token: site.admin, ["id": name, "name": "Not a lock", "roomId": site.roomID])
                #expect(reply.status == 409, "\(reply)")
                #expect(reply.string("code") == "lock_id_taken")
                #expect(try await site.api.get("/api/v1/locks/\(name)", token: site.admin).status == 404)
                // The role made for the would-be lock is taken back.
                await #expect(throws: HarnessError.self) { try await site.broker.dynsec(["getRole", "unlockit-lock-\(name)"]) }
            }
            // Both accounts still work: the server still reaches its locks, the superuser still connects.
            let reply = try await site.unlock(lock.id)
            #expect(reply.status == 200)
            #expect(reply.json["granted"] as? Bool == true)
            let superuser = try await site.superuser()
            await superuser.shutdown()

            // An account a lock of that device id left behind (the database forgot it, the broker did
            // not) is replaced, and the lock connects with its new password.
            _ = try await site.broker.dynsec(["createRole", "unlockit-lock-lock-stale"])
            _ = try await site.broker.dynsec(["createClient", "lock-stale", "-p", "an old password"])
            _ = try await site.broker.dynsec(["addClientRole", "lock-stale", "unlockit-lock-lock-stale"])
            let (stale, password) = try await site.registerLock("lock-stale")
            #expect(password != "an old password")
            try await stale.start(broker: site.broker.url, password: password, pairing: true)
            try await site.waitUntilOnline("lock-stale")

            // Each refusal told of an account outside the company, and counted as another company's
            // device id does: the third spends the budget of three, and registering is paused.
            let third = try await site.api.post("/api/v1/locks", token: site.admin, ["id": "tester", "name": "Not a lock", "roomId": site.roomID])
            #expect(third.code == "lock_id_taken", "\(third)")
            let paused = try await site.api.post("/api/v1/locks", token: site.admin, ["id": "lock-next", "name": "Next", "roomId": site.roomID])
            #expect(paused.status == 429 && paused.code == "too_many_taken_lock_ids", "\(paused)")
        }
    }

    @Test("A registration whose audit event cannot be written is undone, and trying again gets a working account")
    func registrationWithoutItsAuditEventIsUndone() async throws {
        try await Site.with() { site in
            // The server's database refuses the registration's audit event, as a failing disk would.
            let database = try DatabaseQueue(path: site.server.databasePath)
            try await database.write { db in
                try db.execute(
                    sql: """
                        CREATE TRIGGER refuseRegistration BEFORE INSERT ON auditEvent
                        WHEN NEW.action = 'register_lock' AND NEW.outcome = 'success'
                        BEGIN SELECT RAISE(ABORT, 'injected by the test'); END
                        """)
            }
            let failed = try await site.api.post("/api/v1/locks", token: site.admin, ["id": "lock-undone", "name": "Door", "roomId": site.roomID])
            #expect(failed.status == 500, "\(failed)")
            #expect(failed.json["mqtt"] == nil)
            // Nothing is left of it: not the lock, not its broker account.
            #expect(try await site.api.get("/api/v1/locks/lock-undone", token: site.admin).status == 404)
            await #expect(throws: HarnessError.self) { try await site.broker.dynsec(["getClient", "lock-undone"]) }

            try await database.write { db in try db.execute(sql: "DROP TRIGGER refuseRegistration") }
            let (lock, password) = try await site.registerLock("lock-undone")
            try await lock.start(broker: site.broker.url, password: password, pairing: true)
            try await site.waitUntilOnline("lock-undone")
        }
    }

    @Test("A new broker password: the lock is disconnected, the old password refused, the key kept; a lost registration recovers")
    func newBrokerPassword() async throws {
        try await Site.with() { site in
            try await site.addSuperuserAccount()
            let (lock, oldPassword) = try await site.activeLock("lock-new-password")
            try await site.authorizeAdmin()
            #expect(try await site.unlock(lock.id).status == 200)
            #expect(try await site.retainedStatus(of: lock.id).map { try LockStatus.decode($0).online } == true)

            let reply = try await site.api.post("/api/v1/locks/\(lock.id)/broker-password", token: site.admin)
            #expect(reply.status == 200, "\(reply)")
            let mqtt = try #require(reply.json["mqtt"] as? [String: any Sendable])
            let newPassword = try #require(mqtt["password"] as? String)
            #expect(newPassword != oldPassword && newPassword.count == 64 && newPassword.allSatisfy(\.isHexDigit))
            #expect(mqtt["username"] as? String == lock.id)
            #expect((reply.json["lock"] as? [String: any Sendable])?["state"] as? String == "active")

            // The broker disconnected the lock at once (without its will: the server says offline by
            // itself); it cannot come back with the old password.
            try await lock.process!.waitForLine(containing: "lost the broker")
            try await site.waitUntilOnline(lock.id, false)
            #expect(try await site.unlock(lock.id).code == "lock_offline")
            // The server wrote the offline status the will would have, so that the broker's retained
            // status does not tell a restarted or reconnected server the lock is there.
            #expect(try await site.retainedStatus(of: lock.id).map { try LockStatus.decode($0) } == LockStatus(online: false))
            try await site.waitUntilRefused(lock: lock.id, password: oldPassword)

            // With the new password the same lock connects and opens: its key was kept, no activation.
            await lock.stop()
            try await lock.start(broker: site.brokerURL, password: newPassword, pairing: false)
            try await site.waitUntilOnline(lock.id)
            let after = try await site.unlock(lock.id)
            #expect(after.status == 200 && after.json["granted"] as? Bool == true, "\(after)")
            #expect(try await lock.stats()["openings"] == 1)  // the restarted process counts from zero

            // Audited, and the password is in no audit event and no log line.
            let audit = try await site.api.get("/api/v1/audit?action=reset_lock_password", token: site.admin)
            let events = try #require(audit.json["items"] as? [[String: any Sendable]])
            #expect(events.count == 1)
            #expect(events.first?["lockId"] as? String == lock.id && events.first?["outcome"] as? String == "success")
            #expect(!String(decoding: audit.body, as: UTF8.self).contains(newPassword))
            #expect(site.server.process.lines(containing: newPassword).isEmpty)

            // A registration whose answer was lost: the device id is taken and no one has the password.
            let lost = try await TestLock(id: "lock-lost-answer", directory: site.directory.path)
            let registered = try await site.api.post("/api/v1/locks", token: site.admin, ["id": lost.id, "name": "Lost", "roomId": site.roomID])
            #expect(registered.status == 201)
            let again = try await site.api.post("/api/v1/locks", token: site.admin, ["id": lost.id, "name": "Lost", "roomId": site.roomID])
            #expect(again.code == "lock_id_taken")
            let recovered = try await site.api.post("/api/v1/locks/\(lost.id)/broker-password", token: site.admin)
            let password = try #require((recovered.json["mqtt"] as? [String: any Sendable])?["password"] as? String)
            try await lost.start(broker: site.brokerURL, password: password, pairing: true)
            let activated = try await site.api.post("/api/v1/locks/\(lost.id)/activate", token: site.admin, ["setupCode": lost.setupCode])
            #expect(activated.status == 200, "\(activated)")

            // Refused: an employee, a lock of another company (not found), a retired lock.
            let employee = try await site.employee("clerk@site.test", level: 5)
            let forbidden = try await site.api.post("/api/v1/locks/\(lock.id)/broker-password", token: employee.token)
            #expect(forbidden.status == 403)
            let other = try await site.server.adminSession(company: "Other", email: "admin@other.test")
            let foreign = try await site.api.post("/api/v1/locks/\(lock.id)/broker-password", token: other)
            #expect(foreign.status == 404 && foreign.code == "lock_not_found")
            #expect(try await site.api.post("/api/v1/locks/\(lost.id)/retire", token: site.admin).status == 200)
            let retired = try await site.api.post("/api/v1/locks/\(lost.id)/broker-password", token: site.admin)
            #expect(retired.status == 409 && retired.code == "lock_retired")
            await #expect(throws: HarnessError.self) { try await site.broker.dynsec(["getClient", lost.id]) }
            // A new password asked for while the lock is being retired: whichever goes first, the
            // retired lock is left without a broker account.
            for index in 0..<6 {
                let id = "lock-race-\(index)"
                _ = try await site.registerLock(id)
                async let retire = site.api.post("/api/v1/locks/\(id)/retire", token: site.admin)
                async let reset = site.api.post("/api/v1/locks/\(id)/broker-password", token: site.admin)
                let (retired, reissued) = try await (retire, reset)
                #expect(retired.status == 200, "\(retired)")
                #expect(reissued.status == 200 || reissued.code == "lock_retired", "\(reissued)")
                await #expect(throws: HarnessError.self, "\(id) kept a broker account") { try await site.broker.dynsec(["getClient", id]) }
            }
            // The refusals changed nothing: the lock still opens with the password it was given.
            #expect(try await site.unlock(lock.id).status == 200)
        }
    }

    @Test("A registration of another company's device id, never activated, lapses: the owner takes the lock over, pairs and opens it")
    func aSquattedDeviceIDGoesToItsOwner() async throws {
        let lapse = 4.0
        try await Site.with(serverEnvironment: ["UNLOCKIT_LOCK_ID_LAPSE": "\(Int(lapse))"]) { site in
            let (squatter, squatterRoomID) = try await site.otherCompany("Squatter")
            // The device is the site's; another company read the id on its label and registered it first.
            let lock = try await TestLock(id: "lock-owned", directory: site.directory.path)
            let squatted = try await site.api.post("/api/v1/locks", token: squatter, ["id": lock.id, "name": "Mine", "roomId": squatterRoomID])
            #expect(squatted.status == 201, "\(squatted)")
            let squatterPassword = try #require((squatted.json["mqtt"] as? [String: any Sendable])?["password"] as? String)
            let register: @Sendable () async throws -> APIClient.Reply = {
                try await site.api.post("/api/v1/locks", token: site.admin, ["id": lock.id, "name": "Lab door", "roomId": site.roomID])
            }
            #expect(try await register().code == "lock_id_taken")

            // Once the registration has lapsed, the owner's registration takes the lock over.
            try await Task.sleep(for: .seconds(lapse + 0.5))
            try await site.activateAndOpen(lock, registered: try await register())
            #expect(try await lock.stats()["openings"] == 1)

            // The squatter's broker password opens no connection; its lock is gone and its log says so.
            try await site.waitUntilRefused(lock: lock.id, password: squatterPassword)
            #expect(try await site.api.get("/api/v1/locks/\(lock.id)", token: squatter).code == "lock_not_found")
            let released = try #require(
                try await site.api.get("/api/v1/audit?action=release_lock", token: squatter).json["items"] as? [[String: any Sendable]])
            #expect(released.count == 1 && released.first?["reason"] as? String == "registered_elsewhere", "\(released)")
            // Activated, the lock keeps its id from the squatter for good.
            try await Task.sleep(for: .seconds(lapse + 0.5))
            let again = try await site.api.post("/api/v1/locks", token: squatter, ["id": lock.id, "name": "Mine", "roomId": squatterRoomID])
            #expect(again.code == "lock_id_taken", "\(again)")
            await lock.stop()
        }
    }

    @Test("A made-up id held for good by a stand-in's activation goes to its owner once the operator releases it, with the running server")
    func theOperatorReleasesADisputedDeviceID() async throws {
        try await Site.with { site in
            try await site.addSuperuserAccount()
            let (squatter, squatterRoom) = try await site.otherCompany("Squatter")
            func companyID(_ token: String) async throws -> String {
                try #require((try await site.api.get("/api/v1/me", token: token).json["company"] as? [String: any Sendable])?["id"] as? String)
            }
            let (squatterCompany, siteCompany) = (try await companyID(squatter), try await companyID(site.admin))
            // The squatter registers the id on the site's label, and activates a stand-in it made with a code of its own.
            let lock = try await TestLock(id: "lock-disputed", directory: site.directory.path)
            let standInFolder = "\(site.directory.path)/stand-in"
            try FileManager.default.createDirectory(atPath: standInFolder, withIntermediateDirectories: true)
            let standIn = try await TestLock(id: lock.id, directory: standInFolder)
            let squatted = try await site.api.post("/api/v1/locks", token: squatter, ["id": lock.id, "name": "Mine", "roomId": squatterRoom])
            let squatterPassword = try #require((squatted.json["mqtt"] as? [String: any Sendable])?["password"] as? String, "\(squatted)")
            _ = try await standIn.start(broker: site.brokerURL, password: squatterPassword, pairing: true)
            try await site.waitUntilOnline(lock.id, token: squatter)
            let activated = try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: squatter, ["setupCode": standIn.setupCode])
            #expect(activated.status == 200, "\(activated)")
            let register: @Sendable (String, String) async throws -> APIClient.Reply = { token, room in
                try await site.api.post("/api/v1/locks", token: token, ["id": lock.id, "name": "Lab door", "roomId": room])
            }
            #expect(try await register(site.admin, site.roomID).code == "lock_id_taken")

            // Without --yes the operator is shown the holder, with its company's id, and nothing changes;
            // --yes needs that id, and with another company's nothing changes either.
            let shown = try await site.server.command(["release-lock", lock.id])
            let holder = shown.output.joined(separator: "\n")
            #expect(shown.status == 0 && holder.contains(#""Squatter""#) && holder.contains("active since"), "\(holder)")
            #expect(holder.contains("--holder \(squatterCompany) --yes"), "\(holder)")
            #expect(try await site.server.command(["release-lock", lock.id, "--yes"]).status != 0)
            let wrongHolder = try await site.server.command(["release-lock", lock.id, "--holder", siteCompany, "--yes"])
            #expect(wrongHolder.status != 0 && wrongHolder.output.contains { $0.hasPrefix("The lock was not released") }, "\(wrongHolder.output)")
            #expect(try await site.api.get("/api/v1/locks/\(lock.id)", token: squatter).status == 200)
            _ = try await site.broker.dynsec(["getClient", lock.id])  // its broker account too
            #expect(try await site.retainedStatus(of: lock.id).map { try LockStatus.decode($0).online } == true)
            #expect(try await register(site.admin, site.roomID).code == "lock_id_taken")

            // Released to the site, while the server runs: the squatter's lock is gone, and its log says why.
            let released = try await site.server.command(["release-lock", lock.id, "--holder", squatterCompany, "--to", siteCompany, "--yes"])
            #expect(released.status == 0 && released.output.contains { $0.hasPrefix("Released: \(lock.id)") }, "\(released.output)")
            #expect(try await site.api.get("/api/v1/locks/\(lock.id)", token: squatter).code == "lock_not_found")
            let events = try #require(
                try await site.api.get("/api/v1/audit?action=release_lock", token: squatter).json["items"] as? [[String: any Sendable]])
            #expect(events.count == 1 && events.first?["reason"] as? String == "released_by_operator", "\(events)")
            #expect(events.first?["actorId"] == nil && events.first?["roomId"] as? String == squatterRoom, "\(events)")
            // Its broker account is gone: the stand-in's password opens no connection any more.
            await #expect(throws: HarnessError.self, "\(lock.id) kept a broker account") { try await site.broker.dynsec(["getClient", lock.id]) }
            try await site.waitUntilRefused(lock: lock.id, password: squatterPassword)
            // Disconnected without its will, and no device can write the id's status now: the stand-in's "online" is cleared.
            #expect(try await site.retainedStatus(of: lock.id) == nil)
            // The site's log says the id is kept for it, and names neither the squatter nor its lock.
            let kept = try #require(
                try await site.api.get("/api/v1/audit?action=reserve_lock_id", token: site.admin).json["items"] as? [[String: any Sendable]])
            #expect(kept.count == 1 && kept.first?["lockId"] as? String == lock.id, "\(kept)")
            #expect(kept.first?["reason"] as? String == "released_to_company" && kept.first?["roomId"] == nil, "\(kept)")
            // The id is kept for the site: the squatter cannot register it again first.
            #expect(try await register(squatter, squatterRoom).code == "lock_id_taken")

            // The site registers its device, pairs it and opens.
            try await site.activateAndOpen(lock, registered: try await register(site.admin, site.roomID))
            #expect(try await lock.stats()["openings"] == 1)

            // An id no lock has: said, and a failure.
            let missing = try await site.server.command(["release-lock", "lock-nobody"])
            #expect(missing.status != 0 && missing.output.contains("No lock has the device id lock-nobody."), "\(missing.output)")
            await standIn.stop()
            await lock.stop()
        }
    }

    @Test("An activation takes the lock's turn: another company's registration after the lapse waits for it, then finds the id kept")
    func aLapsedRegistrationBeingActivatedIsNotTakenOver() async throws {
        let lapse = 1.0
        try await Site.with(serverEnvironment: ["UNLOCKIT_LOCK_ID_LAPSE": "\(Int(lapse))"]) { site in
            try await site.addSuperuserAccount()
            let (other, otherRoom) = try await site.otherCompany("Other")
            let (lock, password) = try await site.registerLock("lock-late-pairing")
            let firmware = try await lock.start(broker: site.brokerURL, password: password, pairing: true)
            try await site.waitUntilOnline(lock.id)
            try await Task.sleep(for: .seconds(lapse + 0.5))  // the site's registration has lapsed for other companies
            let watcher = try await site.superuser()
            let commands = try await watcher.record(Topics.command(LockID(lock.id)!))

            // The lock's firmware hangs with its connection up: the activation waits for its answer,
            // and no pairing key is held yet that would keep the id by itself.
            try await firmware.suspend()
            let activation = Task {
                try await site.api.post("/api/v1/locks/\(lock.id)/activate", token: site.admin, ["setupCode": lock.setupCode])
            }
            _ = try await commands.waitFor("the activate command") { $0.contains(#""op":"activate""#) }
            let answered = LockedBox(false)
            let registration = Task {
                defer { answered.set(true) }
                return try await site.api.post("/api/v1/locks", token: other, ["id": lock.id, "name": "Door", "roomId": otherRoom])
            }
            try await Task.sleep(for: .milliseconds(700))
            let answeredWhileActivating = answered.get()
            firmware.resume()
            let activated = try await activation.value
            let taken = try await registration.value
            // The registration waited for the activation's turn, and then found the id kept.
            #expect(!answeredWhileActivating, "\(taken)")
            #expect(activated.status == 200, "\(activated)")
            #expect(taken.code == "lock_id_taken", "\(taken)")
            // The lock kept its broker account: still online, and it opens.
            #expect(try await site.api.get("/api/v1/locks/\(lock.id)", token: site.admin).json["online"] as? Bool == true)
            try await site.authorizeAdmin()
            let opened = try await site.unlock(lock.id)
            #expect(opened.status == 200 && opened.json["granted"] as? Bool == true, "\(opened)")
            await watcher.shutdown()
            await lock.stop()
        }
    }

    @Test("A factory device id: whoever only saw it cannot register it, not with a stand-in's code either; its owner can, and opens")
    func aFactoryIDGoesOnlyToWhoeverHasItsCode() async throws {
        try await Site.with { site in
            let (squatter, squatterRoom) = try await site.otherCompany("Squatter")
            let lock = try await TestLock(directory: site.directory.path, name: "factory-lock")
            #expect(FactoryID.matches(try #require(LockID(lock.id)), try #require(SetupCode(lock.setupCode))), "\(lock.id)")
            // The squatter read the id on the lock; a stand-in it would make for that id has a code of its own.
            let standInCode = SetupCode.random().formatted
            func register(_ token: String, room: String, code: String?) async throws -> APIClient.Reply {
                var body: [String: any Sendable] = ["id": lock.id, "name": "Door", "roomId": room]
                if let code { body["setupCode"] = code }
                return try await site.api.post("/api/v1/locks", token: token, body)
            }
            #expect(try await register(squatter, room: squatterRoom, code: nil).code == "setup_code_required")
            #expect(try await register(squatter, room: squatterRoom, code: standInCode).code == "setup_code_mismatch")

            try await site.activateAndOpen(lock, registered: try await register(site.admin, room: site.roomID, code: lock.setupCode))
            #expect(try await site.api.get("/api/v1/locks/\(lock.id)", token: squatter).code == "lock_not_found")
            await lock.stop()
        }
    }

    @Test("A killed lock is marked offline by its last will; unlocking it answers at once")
    func killedLock() async throws {
        try await Site.with() { site in
            let (lock, _) = try await site.activeLock("lock-killed")
            try await site.authorizeAdmin()
            #expect(try await site.unlock(lock.id).status == 200)

            lock.process!.kill9()
            // The broker notices the dead TCP connection at once and publishes the will.
            try await site.waitUntilOnline(lock.id, false, timeout: .seconds(20))
            let start = ContinuousClock.now
            let reply = try await site.unlock(lock.id)
            let elapsed = start.duration(to: .now)
            #expect(reply.status == 503 || reply.status == 504)
            #expect(["lock_offline", "lock_timeout"].contains(reply.code ?? ""))
            #expect(elapsed < .seconds(3.5))
        }
    }

    @Test("The server's broker role is repaired at the next connect: an earlier version's (no status ACL), and none at all")
    func serverRoleRepaired() async throws {
        try await Site.with() { site in
            try await site.addSuperuserAccount()
            let statuses = "unlockit/v1/locks/+/status"
            #expect(try await site.broker.dynsec(["getRole", "unlockit-server"]).contains(statuses))
            _ = try await site.broker.dynsec(["removeRoleACL", "unlockit-server", "publishClientSend", statuses])
            // mosquitto disconnects the role's clients when it changes, and the server's next connect
            // puts the ACL back; a restart of the broker makes sure there is a next connect.
            try await site.broker.restart(downtime: .zero)
            try await site.server.waitUntilHealthy(timeout: .seconds(20))
            try await Network.waitUntil("the status ACL back", timeout: .seconds(20)) {
                try await site.broker.dynsec(["getRole", "unlockit-server"]).contains(statuses)
            }
            #expect(!site.server.process.lines(containing: "addRoleACL").isEmpty)

            // A broker without the role at all (set up by hand): made, with both ACLs, and given to the server.
            _ = try await site.broker.dynsec(["deleteRole", "unlockit-server"])
            try await site.broker.restart(downtime: .zero)
            try await site.server.waitUntilHealthy(timeout: .seconds(20))
            try await Network.waitUntil("the role made again", timeout: .seconds(20)) {
                let role = (try? await site.broker.dynsec(["getRole", "unlockit-server"])) ?? ""
                return role.contains(statuses) && role.contains("unlockit/v1/locks/+/cmd")
            }
            #expect(try await site.broker.dynsec(["getClient", site.broker.serverUsername]).contains("unlockit-server (priority"))
            #expect(!site.server.process.lines(containing: "createRole").isEmpty)
            // With it, a new broker password leaves the lock's retained status offline.
            let (lock, _) = try await site.activeLock("lock-repaired")
            try await site.server.waitUntilHealthy(timeout: .seconds(20))
            #expect(try await site.api.post("/api/v1/locks/\(lock.id)/broker-password", token: site.admin).status == 200)
            try await site.waitUntilOnline(lock.id, false)
            #expect(try await site.retainedStatus(of: lock.id).map { try LockStatus.decode($0).online } == false)
        }
    }

    @Test("A broker whose defaults let any client publish and subscribe is set back to deny at the server's next connect")
    func openBrokerDefaultsAreClosed() async throws {
        try await Site.with() { site in
            let closed = try await site.broker.dynsec(["getDefaultACLAccess"])
            #expect(closed.contains("publishClientSend    : deny") && closed.contains("subscribe            : deny"), "\(closed)")
            // Opened in the broker's file while it is stopped (mosquitto_ctrl 2.0's setDefaultACLAccess
            // sends a field the plugin does not read, so an operator would do it this way).
            let file = URL(fileURLWithPath: "\(site.broker.directory)/dynamic-security.json")
            try await site.broker.restart(downtime: .zero) {
                var root = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
                root["defaultACLAccess"] = ["publishClientSend": true, "publishClientReceive": true, "subscribe": true, "unsubscribe": true]
                try JSONSerialization.data(withJSONObject: root).write(to: file)
            }
            try await site.server.waitUntilHealthy(timeout: .seconds(20))
            try await Network.waitUntil("the defaults closed again", timeout: .seconds(20)) {
                try await site.broker.dynsec(["getDefaultACLAccess"]) == closed
            }
            #expect(!site.server.process.lines(containing: "setDefaultACLAccess").isEmpty)
        }
    }

    @Test("Restarting mosquitto: server and lock reconnect by themselves, nothing queued opens the door")
    func brokerRestart() async throws {
        try await Site.with() { site in
            let (lock, _) = try await site.activeLock("lock-restart")
            try await site.authorizeAdmin()
            #expect(try await site.unlock(lock.id).status == 200)
            #expect(try await lock.stats()["openings"] == 1)

            await site.broker.stop()
            // During the outage the server answers at once and queues nothing, and its log says why.
            let during = try await site.unlock(lock.id)
            #expect([503, 504].contains(during.status))
            _ = try await site.server.process.waitForLine(containing: "lost the connection to the MQTT broker")
            let warning = try await site.server.process.waitForLine(containing: "not connected to the MQTT broker")
            #expect(warning.contains("reason=Connection refused"), "the warning says why: \(warning)")
            try await site.broker.restart(downtime: .zero)

            try await lock.process!.waitForLine(containing: "lost the broker")
            try await site.server.waitUntilHealthy(timeout: .seconds(20))
            try await site.waitUntilOnline(lock.id, timeout: .seconds(20))
            // Whatever happened during the outage, the lock did not open.
            #expect(try await lock.stats()["openings"] == 1)
            let after = try await site.unlock(lock.id)
            #expect(after.status == 200)
            #expect(try await lock.stats()["openings"] == 2)
        }
    }

    @Test("A broker named by its host name: the server and the lock look it up, connect, and the door opens")
    func brokerByName() async throws {
        try await Site.with(brokerHost: "localhost") { site in
            #expect(site.server.environment["UNLOCKIT_MQTT_URL"] == "mqtt://localhost:\(site.broker.port)")
            let (lock, _) = try await site.activeLock("lock-named")
            try await site.authorizeAdmin()
            #expect(try await site.unlock(lock.id).status == 200)
            #expect(try await lock.stats()["openings"] == 1)
        }
    }

    @Test("Malformed payloads are dropped and counted; lock and server keep working")
    func malformedPayloads() async throws {
        try await Site.with() { site in
            try await site.addSuperuserAccount()
            let (lock, _) = try await site.activeLock("lock-malformed")
            try await site.authorizeAdmin()
            let lockID = LockID(lock.id)!
            let attacker = try await site.superuser("fuzzer")
            let garbage: [[UInt8]] = [
                Array("not json".utf8), [0xff, 0xfe, 0x00], Array(#"{"v":2,"op":"challenge","req":"x"}"#.utf8),
                Array(#"{"v":1,"op":"open-sesame","req":"x"}"#.utf8), Array(#"{"v":1,"op":"respond","req":"x","response":"00"}"#.utf8),
                Array(repeating: UInt8(ascii: "A"), count: 10_000), Array(#"[1,2,3]"#.utf8), [],
            ]
            for payload in garbage {
                try attacker.publish(topic: Topics.command(lockID), payload: payload)
                try attacker.publish(topic: Topics.event(lockID), payload: payload)
                try attacker.publish(topic: Topics.status(lockID), payload: payload.isEmpty ? [0x20] : payload)
            }
            try await Network.waitUntil("the lock to count the malformed commands") { try await lock.stats()["malformed"] == garbage.count }
            try await Network.waitUntil("the server to count malformed events") {
                let metrics = try await site.server.operations.get("/metrics").text
                let line = metrics.split(separator: "\n").first { $0.hasPrefix("unlockit_mqtt_malformed_messages_total") }
                return Double(line?.split(separator: " ").last ?? "0") ?? 0 >= Double(garbage.count * 2 - 1)
            }
            // Both sides still work.
            #expect(try await site.unlock(lock.id).status == 200)
            #expect(try await lock.stats()["openings"] == 1)
            await attacker.shutdown()
        }
    }
}
