import Foundation
import HTTPTypes
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

/// Bad input gets a clear 4xx problem+json with a stable code, never a 5xx, and changes nothing.
@Suite(.timeLimit(.minutes(10)))
struct ErrorTests {
    static let oneRow = #"{"users":[{"email":"new@b.test","name":"N","role":"employee","securityLevel":1,"oidcOnly":true}]}"#

    @Test func badInputIsAClearClientError() async throws {
        let harness = try Harness()
        try await harness.run { api in
            let admin = try await api.company("Errors")
            let cases: [(HTTPRequest.Method, String, String?, Int, String)] = [
                (.post, "/api/v1/users", "{not json", 400, "malformed_json"),
                (.post, "/api/v1/users", "[1,2,3]", 400, "invalid_request"),
                (.post, "/api/v1/users", #"{"email":"a@b.test","name":"A","role":"king","securityLevel":1}"#, 400, "invalid_field"),
                (.post, "/api/v1/users", #"{"email":"a@b.test","name":"A","role":"employee","securityLevel":"high"}"#, 400, "invalid_field"),
                (.post, "/api/v1/users", #"{"email":"a@b.test","name":"A","role":"employee"}"#, 400, "invalid_field"),
                (.post, "/api/v1/users", #"{"email":"a@b.test","name":"A","role":"employee","securityLevel":1,"isRoot":true}"#, 400, "unknown_field"),
                (.post, "/api/v1/users", #"{"email":"nope","name":"A","role":"employee","securityLevel":1}"#, 400, "invalid_field"),
                (.post, "/api/v1/users", #"{"email":"a@b.test","name":"A","role":"employee","securityLevel":-1}"#, 400, "invalid_field"),
                (
                    .post, "/api/v1/users", #"{"email":"a@b.test","name":"A","role":"employee","securityLevel":1,"password":"short"}"#, 400,
                    "weak_password"
                ),
                (.post, "/api/v1/rooms", #"{"name":"R","type":"sauna"}"#, 400, "invalid_field"),
                (.post, "/api/v1/rooms", #"{"name":"","type":"office"}"#, 400, "invalid_field"),
                (.patch, "/api/v1/rooms/not-a-uuid", #"{"name":"R"}"#, 400, "invalid_id"),
                (.get, "/api/v1/users/123", nil, 400, "invalid_id"),
                (.get, "/api/v1/locks/Not_A_Lock", nil, 400, "invalid_id"),
                (.post, "/api/v1/locks", #"{"id":"BAD ID","name":"x","roomId":"00000000-0000-0000-0000-000000000000"}"#, 400, "invalid_field"),
                (.get, "/api/v1/audit?outcome=maybe", nil, 400, "invalid_field"),
                (.get, "/api/v1/audit?limit=0", nil, 400, "invalid_field"),
                (.get, "/api/v1/audit?from=yesterday", nil, 400, "invalid_field"),
                // `null` is refused where it means nothing of its own: it would read as absent.
                (
                    .post, "/api/v1/users", #"{"email":"a@b.test","name":"A","role":"employee","securityLevel":1,"enabled":null}"#, 400,
                    "invalid_field"
                ),
                (.patch, "/api/v1/users/00000000-0000-4000-8000-000000000000", #"{"name":null,"securityLevel":3}"#, 400, "invalid_field"),
                (.post, "/api/v1/users/00000000-0000-4000-8000-000000000000/password", #"{"password":null}"#, 400, "invalid_field"),
                (.post, "/api/v1/rooms", #"{"name":"R","type":"office","description":null}"#, 400, "invalid_field"),
                (
                    .post, "/api/v1/users/import",
                    #"{"users":[{"email":"a@b.test","name":"A","role":"employee","securityLevel":1,"password":null}]}"#,
                    400, "invalid_field"
                ),
                (.get, "/api/v1/nothing-here", nil, 404, "route_not_found"),
                (.post, "/api/v1/auth/sign-in", #"{"email":"x"}"#, 400, "invalid_field"),
                // A misspelt field in an import's row is refused, not dropped (it would create an enabled user).
                (
                    .post, "/api/v1/users/import",
                    #"{"users":[{"email":"a@b.test","name":"A","role":"employee","securityLevel":1},{"email":"c@b.test","name":"C","role":"employee","securityLevel":1,"enable":false}]}"#,
                    400, "unknown_field"
                ),
                // A dry run asked for in any other spelling is refused, not taken for a real import.
                (.post, "/api/v1/users/import?dryRun=TRUE", Self.oneRow, 400, "invalid_field"),
                (.post, "/api/v1/users/import?dryRun=yes", Self.oneRow, 400, "invalid_field"),
                (.post, "/api/v1/users/import?dryRun", Self.oneRow, 400, "invalid_field"),
                // So is a dry run asked for under another name, and a misspelt filter (it would list everything).
                (.post, "/api/v1/users/import?dryrun=true", Self.oneRow, 400, "unknown_field"),
                (.post, "/api/v1/users/import?dry_run=1", Self.oneRow, 400, "unknown_field"),
                (.post, "/api/v1/users/import?dryRun=true&dryRun=false", Self.oneRow, 400, "invalid_field"),
                (.get, "/api/v1/audit?actoin=unlock", nil, 400, "unknown_field"),
                (.get, "/api/v1/audit?limit=5&limit=500", nil, 400, "invalid_field"),
                (.get, "/api/v1/locks?rooms=00000000-0000-4000-8000-000000000000", nil, 400, "unknown_field"),
                // A route that reads no query refuses one: a dry run or a filter there would be taken for real or ignored.
                (.post, "/api/v1/users?dryRun=true", #"{"email":"dry@b.test","name":"D","role":"employee","securityLevel":1}"#, 400, "unknown_field"),
                (.get, "/api/v1/rooms?name=Lab", nil, 400, "unknown_field"),
                (.get, "/api/v1/users/00000000-0000-4000-8000-000000000000?fields=all", nil, 400, "unknown_field"),
                (.delete, "/api/v1/rooms/00000000-0000-4000-8000-000000000000?force=1", nil, 400, "unknown_field"),
                (.get, "/api/v1/me?x", nil, 400, "unknown_field"),
                // A body that cannot be right is refused before the record is looked up: whatever
                // the id, a missing one too, the answer is the same.
                (.post, "/api/v1/users/00000000-0000-4000-8000-000000000000/password", #"{"password":"short"}"#, 400, "weak_password"),
                (.post, "/api/v1/locks/lock-missing/activate", #"{"setupCode":"nope"}"#, 400, "invalid_field"),
                (.delete, "/api/v1/users/00000000-0000-4000-8000-000000000000", nil, 404, "user_not_found"),
                (.delete, "/api/v1/rooms/00000000-0000-4000-8000-000000000000", nil, 404, "room_not_found"),
            ]
            for (method, path, body, status, code) in cases {
                let reply = try await api.call(method, path, token: admin, raw: body)
                #expect(reply.status == status, "\(method) \(path) \(body ?? ""): \(reply)")
                #expect(reply.code == code, "\(method) \(path) \(body ?? ""): \(reply)")
                #expect(reply.contentType == "application/problem+json", "\(method) \(path)")
                #expect(reply.json["type"] as? String == "urn:unlockit:problem:\(code)")
                #expect(reply.json["status"] as? Int == status)
            }
            // The user asked for with a query no route reads was not created; the routes that read one still do.
            let users = try await api.get("/api/v1/users", admin)
            let emails = (users.json["items"] as? [[String: any Sendable]])?.compactMap { $0["email"] as? String }
            #expect(emails?.isEmpty == false && emails?.contains("dry@b.test") == false, "\(users)")
            #expect(try await api.call(.get, "/api/v1/nothing-here?x=1", token: admin, raw: nil).status == 404)
            #expect(try await api.call(.get, "/api/v1/locks?room=00000000-0000-4000-8000-000000000000", token: admin, raw: nil).status == 200)
            #expect(try await api.call(.head, "/api/v1/locks?room=00000000-0000-4000-8000-000000000000", token: admin, raw: nil).status == 200)
            #expect(try await api.call(.get, "/api/v1/audit?limit=1", token: admin, raw: nil).status == 200)
            let nullName = try await api.call(.patch, "/api/v1/users/00000000-0000-4000-8000-000000000000", token: admin, raw: #"{"name":null}"#)
            #expect(nullName.json["detail"] as? String == "name: must not be null")
            let nullRow = try await api.call(.post, "/api/v1/users/import", token: admin, raw: #"{"users":[{"email":"a@b.test","name":null}]}"#)
            #expect(nullRow.json["detail"] as? String == "users[0].name: must not be null")
            let misspelt = try await api.call(.get, "/api/v1/audit?actoin=unlock", token: admin, raw: nil)
            #expect(misspelt.json["detail"] as? String == #""actoin" is not a parameter of this request"#)
            // A row's field is named as the client writes it.
            let wrongType = try await api.call(
                .post, "/api/v1/users/import", token: admin,
                raw: #"{"users":[{"email":"a@b.test","name":"A","role":"employee","securityLevel":1},{"email":"c@b.test","name":7}]}"#)
            #expect(wrongType.json["detail"] as? String == "users[1].name: has the wrong type")
            let missing = try await api.call(
                .post, "/api/v1/users/import", token: admin, raw: #"{"users":[{"email":"a@b.test","name":"A","role":"employee"}]}"#)
            #expect(missing.json["detail"] as? String == "users[0].securityLevel: is required")
            // A value refused is said in words written for clients, never in Foundation's (which name Swift types).
            let details: [(String, String, String)] = [
                ("/api/v1/users", #"{"email":"a@b.test","name":"A","role":"king","securityLevel":1}"#, "role: must be one of admin, employee"),
                (
                    "/api/v1/rooms", #"{"name":"R","type":"sauna"}"#,
                    "type: must be one of office, meeting, silent, cafeteria, other"
                ),
                // Valid JSON whose number no field here can hold: not "malformed", as Foundation's decoder has it.
                (
                    "/api/v1/users", #"{"email":"a@b.test","name":"A","role":"employee","securityLevel":1.5}"#,
                    "body: has a number its field cannot hold: every number here is a whole number"
                ),
                (
                    "/api/v1/rooms", #"{"name":"R","type":"office","requiredLevel":100000000000000000000}"#,
                    "body: has a number its field cannot hold: every number here is a whole number"
                ),
            ]
            for (path, body, detail) in details {
                let reply = try await api.call(.post, path, token: admin, raw: body)
                #expect(reply.status == 400 && reply.code == "invalid_field", "\(path) \(body): \(reply)")
                #expect(reply.json["detail"] as? String == detail, "\(path) \(body): \(reply)")
            }
            let huge = #"{"name":"\#(String(repeating: "x", count: 100_000))","type":"office"}"#
            let tooLarge = try await api.call(.post, "/api/v1/rooms", token: admin, raw: huge)
            #expect(tooLarge.status == 413)
            #expect(tooLarge.code == "body_too_large")
            // Nothing was created by any of it.
            #expect(try await api.get("/api/v1/users", admin).items.count == 1)
            #expect(try await api.get("/api/v1/rooms", admin).items.isEmpty)
        }
    }

    @Test("A decoding failure's own text is never repeated: a field's value is refused in words written for clients")
    func decodingFailuresDoNotEchoFoundation() throws {
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        let path = [Key(stringValue: "users"), Key(stringValue: "when")]
        let foundation = DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "Expected date string to be ISO8601-formatted."))
        #expect(ProblemMiddleware.decodingProblem(foundation).detail == "users.when: is not a valid value")
        let ours = DecodingError.dataCorrupted(
            .init(codingPath: path, debugDescription: "internal words", underlyingError: InvalidValue("is not a valid lock id")))
        #expect(ProblemMiddleware.decodingProblem(ours).detail == "users.when: is not a valid lock id")
        // An id that is not one, as the CLI and the tests decode them.
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([UserID].self, from: Data(#"["x"]"#.utf8)) }
        do {
            _ = try JSONDecoder().decode([LockID].self, from: Data(#"["BAD ID"]"#.utf8))
            Issue.record("a lock id with a space was decoded")
        } catch DecodingError.dataCorrupted(let context) {
            #expect((context.underlyingError as? InvalidValue)?.reason == "is not a valid lock id")
        }
    }

    @Test("A path the API has, asked with a method it does not answer there: 405 with Allow, not 404")
    func methodNotAllowed() async throws {
        let harness = try Harness()
        try await harness.run { api in
            let admin = try await api.company("Methods")
            let cases: [(HTTPRequest.Method, String, String)] = [
                (.delete, "/api/v1/users", "GET, HEAD, POST"),
                (.put, "/api/v1/locks/lock-front/unlock", "POST"),
                (.post, "/api/v1/users/00000000-0000-4000-8000-000000000000", "DELETE, GET, HEAD, PATCH"),
                (.trace, "/api/v1/audit", "GET, HEAD"),
                (.options, "/api/v1/openapi.json", "GET, HEAD"),
                // The router takes the literal route, not `/users/{id}`: only that route's methods.
                (.get, "/api/v1/users/import", "POST"),
                (.put, "/api/v1/rooms/00000000-0000-4000-8000-000000000000/authorized-users", ""),
            ]
            for (method, path, allow) in cases {
                let reply = try await api.call(method, path, token: admin)
                if allow.isEmpty {
                    // No route has this path at all.
                    #expect(reply.status == 404, "\(method) \(path): \(reply)")
                    #expect(reply.code == "route_not_found")
                    continue
                }
                #expect(reply.status == 405, "\(method) \(path): \(reply)")
                #expect(reply.code == "method_not_allowed")
                #expect(reply.contentType == "application/problem+json")
                #expect(reply.headers[.allow] == allow, "\(method) \(path)")
            }
            // Without a token too: what a path answers is no secret, and the route was never reached.
            #expect(try await api.call(.delete, "/api/v1/rooms").status == 405)
            // HEAD wherever GET is: the same status and headers, no body.
            let head = try await api.call(.head, "/api/v1/openapi.json")
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            #expect(try await api.call(.head, "/api/v1/users", token: admin).status == 200)
            #expect(try await api.call(.head, "/api/v1/users").status == 401)
        }
    }

    @Test("The operations listener: /healthz and /metrics with HEAD, 405 for other methods, nothing of the API")
    func operationsRoutes() async throws {
        let harness = try Harness()
        try await harness.runOperations { api in
            // The harness's broker is never reached: degraded, and said so.
            let health = try await api.call(.get, "/healthz")
            #expect(health.status == 503)
            #expect(health.json["broker"] as? String == "disconnected" && health.json["database"] as? String == "ok")
            let head = try await api.call(.head, "/healthz")
            #expect(head.status == 503 && head.body.isEmpty)
            let metrics = try await api.call(.get, "/metrics")
            #expect(metrics.status == 200 && String(decoding: metrics.body, as: UTF8.self).contains("unlockit_locks_online"))
            #expect(metrics.headers[.cacheControl] == "no-store")
            #expect(metrics.headers[.xContentTypeOptions] == "nosniff")
            for path in ["/healthz", "/metrics"] {
                let reply = try await api.call(.post, path)
                #expect(reply.status == 405 && reply.headers[.allow] == "GET, HEAD", "\(path): \(reply)")
            }
            for path in ["/api/v1/openapi.json", "/api/v1/auth/sign-in", "/api/v1/users"] {
                let reply = try await api.call(.get, path)
                #expect(reply.status == 404 && reply.code == "route_not_found", "\(path): \(reply)")
            }
        }
        try await harness.runOperations(brokerReady: { true }) { api in
            let health = try await api.call(.get, "/healthz")
            #expect(health.status == 200 && health.json["status"] as? String == "ok", "\(health)")
        }
    }

    @Test("Audit times are RFC 3339: any offset, with or without fractional seconds")
    func auditTimesAreRFC3339() async throws {
        let harness = try Harness()
        try await harness.run { api in
            let admin = try await api.company("Times")
            for time in ["2026-11-22T08:00:00Z", "2026-11-22T08:00:00.250Z", "2026-11-22T09:00:00%2B01:00", "2642-10-11T01:57:24.33-06:22"] {
                let reply = try await api.call(.get, "/api/v1/audit?from=2000-01-01T00:00:00Z&to=\(time)", token: admin)
                #expect(reply.status == 200, "\(time): \(reply)")
            }
            let late = try await api.call(.get, "/api/v1/audit?from=2999-01-01T00:00:00.5Z", token: admin)
            #expect(late.status == 200)
            #expect(late.items.isEmpty)
        }
    }

    @Test func noDoorOpensWhileTheAuditLogCannotTakeItsRecord() async throws {
        // A queue bound of zero: the audit log is as far behind as it may get.
        let harness = try Harness(auditCapacity: 0) { $0.unlocksPerUserPerMinute = 1 }
        try await harness.run { api in
            let admin = try await api.company("Backlog")
            // Refused before the attempt is counted: the admin, allowed one a minute, is not paused.
            for _ in 0..<3 {
                let reply = try await api.post("/api/v1/locks/lock-anywhere/unlock", admin)
                #expect(reply.status == 503, "\(reply)")
                #expect(reply.code == "server_busy")
                #expect(reply.headers[.retryAfter] == "1")
            }
            // Refused before anything else: not even the lookup's denial was recorded, nor a pause.
            #expect(try await api.get("/api/v1/audit?action=unlock", admin).items.isEmpty)
        }
    }

    @Test func aRetirementTheBrokerCannotCarryOutIsAuditedAndChangesNothing() async throws {
        let harness = try Harness()  // its broker address is a closed port
        try await harness.run { api in
            let admin = try await api.company("Retire")
            let room = try await api.createRoom(admin, "Lab")
            let companyID = try #require(try await harness.store.credentials(email: "admin@retire.test")?.user.companyID)
            try await harness.store.createLock(
                Lock(
                    id: LockID("lock-stays")!, companyID: companyID, roomID: RoomID(room)!, name: "Door", state: .registered,
                    createdAt: harness.clock.now))
            let reply = try await api.post("/api/v1/locks/lock-stays/retire", admin)
            #expect(reply.status == 503, "\(reply)")
            #expect(reply.code == "broker_unavailable")
            #expect(try await api.get("/api/v1/locks/lock-stays", admin).string("state") == "registered")
            let audit = try await api.get("/api/v1/audit?action=retire_lock", admin).items
            #expect(audit.count == 1)
            #expect(audit.first?["outcome"] as? String == "error")
            #expect(audit.first?["reason"] as? String == "broker_unavailable")
        }
    }

    @Test("A room deleted while a lock is registered into it: room_not_found, and no lock")
    func aRoomDeletedMeanwhileIsNotFound() async throws {
        let harness = try Harness()
        let (accounts, broker) = AgreeableBroker.make()
        try await harness.run(over: try harness.services(accounts: accounts)) { api in
            let admin = try await api.company("Vanish")
            let room = try await api.createRoom(admin, "Lab")
            // The request finds the room; its write of the lock finds it gone.
            let reply = try await harness.whileUncommitted("DELETE FROM room WHERE id = ?", [room]) {
                try await api.post("/api/v1/locks", admin, ["id": "lock-vanish", "name": "Door", "roomId": room])
            }
            #expect(reply.status == 404 && reply.code == "room_not_found", "\(reply)")
            #expect(try await api.get("/api/v1/locks/lock-vanish", admin).code == "lock_not_found")
            // The account made for it is gone again: nobody was shown its password.
            #expect(broker.commands == ["createRole", "createClient", "deleteClient", "deleteRole"], "\(broker.commands)")
        }
    }

    @Test func aNewBrokerPasswordTheBrokerCannotSetIsAuditedAndShowsNoPassword() async throws {
        let harness = try Harness()  // its broker address is a closed port
        try await harness.run { api in
            let admin = try await api.company("Rekey")
            let room = try await api.createRoom(admin, "Lab")
            let companyID = try #require(try await harness.store.credentials(email: "admin@rekey.test")?.user.companyID)
            try await harness.store.createLock(
                Lock(
                    id: LockID("lock-rekey")!, companyID: companyID, roomID: RoomID(room)!, name: "Door", state: .registered,
                    createdAt: harness.clock.now))
            let reply = try await api.post("/api/v1/locks/lock-rekey/broker-password", admin)
            #expect(reply.status == 503 && reply.code == "broker_unavailable", "\(reply)")
            // A problem document and no password in it: no credential's field, no run of 64 hex digits.
            #expect(reply.contentType?.hasPrefix("application/problem+json") == true, "\(reply)")
            #expect(Set(reply.json.keys).isDisjoint(with: ["mqtt", "username", "password"]), "\(reply)")
            #expect(reply.text.firstMatch(of: /[0-9a-f]{64}/) == nil, "\(reply)")
            let audit = try await api.get("/api/v1/audit?action=reset_lock_password", admin).items
            #expect(audit.count == 1)
            #expect(audit.first?["outcome"] as? String == "error" && audit.first?["reason"] as? String == "broker_unavailable")
            #expect(audit.first?["lockId"] as? String == "lock-rekey")
        }
    }

    @Test("A new broker password is shown with its event queued, and not made while the audit log is behind")
    func aNewBrokerPasswordIsAuditedThroughTheQueue() async throws {
        for full in [false, true] {
            let harness = try Harness(auditCapacity: full ? 0 : 10_000)
            let (accounts, broker) = AgreeableBroker.make()
            try await harness.run(over: try harness.services(accounts: accounts)) { api in
                let admin = try await api.company("Rekey")
                let room = try await api.createRoom(admin, "Lab")
                let registered = try await api.post("/api/v1/locks", admin, ["id": "lock-rekey", "name": "Door", "roomId": room])
                #expect(registered.status == 201, "\(registered)")
                let before = broker.commands
                let reply = try await api.post("/api/v1/locks/lock-rekey/broker-password", admin)
                if full {
                    // Nothing was changed that the log could not record: the broker was not asked.
                    #expect(reply.status == 503 && reply.code == "server_busy", "\(reply)")
                    #expect(broker.commands == before, "\(broker.commands)")
                } else {
                    #expect(reply.status == 200, "\(reply)")
                    #expect((reply.json["mqtt"] as? [String: any Sendable])?["password"] as? String != nil, "\(reply)")
                    #expect(broker.commands.count > before.count)
                    let audit = try await api.get("/api/v1/audit?action=reset_lock_password", admin).items
                    #expect(audit.count == 1 && audit.first?["outcome"] as? String == "success", "\(audit)")
                }
            }
        }
    }

    @Test func conflictsHaveTheirOwnCodes() async throws {
        let harness = try Harness()
        try await harness.run { api in
            let admin = try await api.company("Conflicts")
            _ = try await api.createUser(admin, "dup@conflicts.test")
            let duplicate = try await api.post(
                "/api/v1/users", admin, ["email": "DUP@conflicts.test", "name": "D", "role": "employee", "securityLevel": 0])
            #expect(duplicate.status == 409)
            #expect(duplicate.code == "email_taken")
            _ = try await api.createRoom(admin, "Lab")
            #expect(try await api.post("/api/v1/rooms", admin, ["name": "LAB", "type": "office"]).code == "room_name_taken")
            let me = try await api.get("/api/v1/me", admin).json["user"] as? [String: any Sendable]
            let myID = try #require(me?["id"] as? String)
            #expect(try await api.call(.delete, "/api/v1/users/\(myID)", token: admin).code == "cannot_delete_self")
            #expect(try await api.call(.patch, "/api/v1/users/\(myID)", token: admin, json: ["role": "employee"]).code == "last_admin")
        }
    }

    @Test func roomsKeepNullRequiredLevelsDistinctFromAbsentOnes() async throws {
        let harness = try Harness()
        try await harness.run { api in
            let admin = try await api.company("Patch")
            let room = try await api.createRoom(admin, "Server room", requiredLevel: 5)
            let renamed = try await api.call(.patch, "/api/v1/rooms/\(room)", token: admin, json: ["name": "Server Room"])
            #expect(renamed.json["requiredLevel"] as? Int == 5)
            let listOnly = try await api.call(.patch, "/api/v1/rooms/\(room)", token: admin, raw: #"{"requiredLevel":null}"#)
            #expect(listOnly.status == 200)
            #expect(listOnly.json["requiredLevel"] is NSNull)
        }
    }
}
