import Foundation
import HTTPTypes
import LockProtocol
import Testing
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

/// Model-based test of the access rule through the HTTP API: random companies, users, levels, rooms,
/// authorizations, disabled users and retired locks; thousands of random (user, lock) unlock
/// requests, with admin changes in between, each compared with an oracle written here, apart from
/// the server's code.
@Suite(.timeLimit(.minutes(10)))
struct AccessModelTests {
    // MARK: The model

    struct ModelUser {
        let id: String
        let company: Int
        let email: String
        var token: String
        var level: Int
        var enabled: Bool
    }

    struct ModelRoom {
        let id: String
        let company: Int
        var required: Int?
        var authorized: Set<String>
    }

    struct ModelLock {
        let id: String
        let company: Int
        let room: String
        let state: String
    }

    /// What the API must answer, decided from the model alone.
    enum Expected: Equatable {
        case notFound
        case denied(String)
        /// The rule allowed it; with no broker reachable the unlock ends in `broker_unavailable`.
        case allowed
    }

    static func oracle(user: ModelUser, lock: ModelLock?, rooms: [String: ModelRoom]) -> Expected {
        guard let lock, lock.company == user.company else { return .notFound }
        if !user.enabled { return .denied("user_disabled") }
        if lock.state != "active" { return .denied("lock_inactive") }
        let room = rooms[lock.room]!
        if room.authorized.contains(user.id) { return .allowed }
        if let required = room.required { return user.level >= required ? .allowed : .denied("level_too_low") }
        return .denied("not_authorized")
    }

    // MARK: The test

    @Test("10,000 random unlock requests agree with the oracle")
    func randomRequestsAgreeWithTheOracle() async throws {
        let seed = UInt64.random(in: 0..<UInt64.max)
        let harness = try Harness {
            $0.bcryptConcurrency = 2
            // The model is the access rule's; pausing users denied too often, or trying too often,
            // has tests of its own.
            $0.deniedUnlocksPerMinute = 1_000_000
            $0.unlocksPerUserPerMinute = 1_000_000
        }
        try await harness.run { api in
            var random = SeededGenerator(seed: seed)
            var users: [ModelUser] = []
            var rooms: [String: ModelRoom] = [:]
            var locks: [ModelLock] = []
            var admins: [String] = []

            for company in 0..<3 {
                let admin = try await api.company("Company\(company)")
                admins.append(admin)
                let companyID = try #require(try await harness.store.credentials(email: "admin@company\(company).test")?.user.companyID)
                for index in 0..<4 {
                    let level = Int.random(in: 0...5, using: &random)
                    let email = "user\(index)@company\(company).test"
                    let id = try await api.createUser(admin, email, level: level)
                    let token = try await api.session(email, "initial password 1")
                    users.append(ModelUser(id: id, company: company, email: email, token: token, level: level, enabled: true))
                }
                // Room 0 has a level; room 2 is open to its list alone, with an active lock, so that
                // every outcome of the rule comes up whatever the seed (a seed that left no
                // list-only room with an active lock never saw not_authorized, and failed).
                for index in 0..<3 {
                    let required: Int? =
                        switch index {
                        case 0: Int.random(in: 0...5, using: &random)
                        case 2: nil
                        default: Bool.random(using: &random) ? Int.random(in: 0...5, using: &random) : nil
                        }
                    let roomID = try await api.createRoom(admin, "Room \(index)", requiredLevel: required)
                    rooms[roomID] = ModelRoom(id: roomID, company: company, required: required, authorized: [])
                    for lockIndex in 0..<2 {
                        let lockID = LockID("lock-c\(company)-r\(index)-\(lockIndex)")!
                        let anyState = ["active", "active", "active", "registered", "retired"].randomElement(using: &random)!
                        let state = index == 2 && lockIndex == 0 ? "active" : anyState
                        try await harness.store.createLock(
                            Lock(
                                id: lockID, companyID: companyID, roomID: RoomID(roomID)!, name: "Door", state: .registered,
                                createdAt: harness.clock.now))
                        let audit = AuditEvent(companyID: companyID, at: harness.clock.now, actorID: nil, action: .activateLock, outcome: .success)
                        if state != "registered" {
                            let sealed = try KeySealer(masterKey: harness.masterKey).seal(.random(), for: lockID)
                            try await harness.store.activateLock(lockID, in: companyID, sealedKey: sealed, at: harness.clock.now, audit: audit)
                        }
                        if state == "retired" { try await harness.store.retireLock(lockID, in: companyID, at: harness.clock.now, audit: audit) }
                        locks.append(ModelLock(id: lockID.rawValue, company: company, room: roomID, state: state))
                    }
                }
            }
            let lockIDs = locks.map(\.id) + ["lock-does-not-exist"]

            var checked = 0
            var tally: [String: Int] = [:]
            var auditExpected = [0, 0, 0]
            while checked < 10_000 {
                // A random admin change, applied to the server and to the model alike.
                try await mutate(api: api, admins: admins, users: &users, rooms: &rooms, random: &random)

                let batch = (0..<250).map { _ in (users.indices.randomElement(using: &random)!, lockIDs.randomElement(using: &random)!) }
                let replies = try await withThrowingTaskGroup(of: (Int, API.Reply).self) { group in
                    for (index, (user, lock)) in batch.enumerated() {
                        let token = users[user].token
                        group.addTask { (index, try await api.post("/api/v1/locks/\(lock)/unlock", token)) }
                    }
                    var replies = [API.Reply?](repeating: nil, count: batch.count)
                    for try await (index, reply) in group { replies[index] = reply }
                    return replies.map { $0! }
                }
                for ((user, lockID), reply) in zip(batch, replies) {
                    let expected = Self.oracle(user: users[user], lock: locks.first { $0.id == lockID }, rooms: rooms)
                    let actual: Expected? =
                        switch (reply.status, reply.code) {
                        case (404, "lock_not_found"): .notFound
                        case (403, "access_denied"): .denied(reply.string("reason") ?? "")
                        case (503, "broker_unavailable"): .allowed
                        default: nil
                        }
                    #expect(actual == expected, "seed \(seed): user \(users[user]) lock \(lockID): \(reply)")
                    tally["\(expected)", default: 0] += 1
                    auditExpected[users[user].company] += 1
                    checked += 1
                }
            }
            // Every outcome of the rule was exercised.
            for outcome in [
                "allowed", "notFound", "denied(\"level_too_low\")", "denied(\"not_authorized\")", "denied(\"lock_inactive\")",
                "denied(\"user_disabled\")",
            ] {
                #expect(tally[outcome, default: 0] > 0, "seed \(seed): never saw \(outcome); tally \(tally)")
            }
            // And every attempt is in its company's audit log, exactly once.
            for (company, admin) in admins.enumerated() {
                var count = 0
                var before: Int64?
                repeat {
                    let page = try await api.get("/api/v1/audit?action=unlock&limit=1000" + (before.map { "&before=\($0)" } ?? ""), admin)
                    count += page.items.count
                    before = (page.json["nextBefore"] as? NSNumber)?.int64Value
                } while before != nil
                #expect(count == auditExpected[company], "seed \(seed), company \(company)")
            }
        }
    }

    /// One random admin change: a level, an authorization, a room's required level, or an account's
    /// enabled flag.
    func mutate(
        api: API, admins: [String], users: inout [ModelUser], rooms: inout [String: ModelRoom], random: inout SeededGenerator
    ) async throws {
        let userIndex = users.indices.randomElement(using: &random)!
        let user = users[userIndex]
        let admin = admins[user.company]
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            let level = Int.random(in: 0...5, using: &random)
            #expect(try await api.call(.patch, "/api/v1/users/\(user.id)", token: admin, json: ["securityLevel": level]).status == 200)
            users[userIndex].level = level
        case 1:
            let room = rooms.values.filter { $0.company == user.company }.randomElement(using: &random)!
            let authorize = !room.authorized.contains(user.id)
            let reply = try await api.call(authorize ? .put : .delete, "/api/v1/rooms/\(room.id)/authorized-users/\(user.id)", token: admin)
            #expect(reply.status == 200)
            if authorize { rooms[room.id]!.authorized.insert(user.id) } else { rooms[room.id]!.authorized.remove(user.id) }
        case 2:
            let room = rooms.values.filter { $0.company == user.company }.randomElement(using: &random)!
            let required: Int? = Bool.random(using: &random) ? Int.random(in: 0...5, using: &random) : nil
            let body = required.map { #"{"requiredLevel":\#($0)}"# } ?? #"{"requiredLevel":null}"#
            #expect(try await api.call(.patch, "/api/v1/rooms/\(room.id)", token: admin, raw: body).status == 200)
            rooms[room.id]!.required = required
        default:
            let enabled = !user.enabled
            #expect(try await api.call(.patch, "/api/v1/users/\(user.id)", token: admin, json: ["enabled": enabled]).status == 200)
            users[userIndex].enabled = enabled
            if enabled {
                // Re-enabled: the session from before is revoked; the user signs in again.
                #expect(try await api.get("/api/v1/me", user.token).status == 401)
                users[userIndex].token = try await api.session(user.email, "a brand new password")
            }
        }
    }
}

/// A reproducible random source (SplitMix64): a failure prints its seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
