import Foundation
import UnlockITCore
import UnlockITStore

/// The store's share of an unlock, measured in-process on a fresh SQLite file: the session lookup
/// and the unlock context (reads) and the audit append (a write), one at a time.
struct StoreProbe {
    struct Result: Codable {
        var sessionLookupP50Ms: Double
        var unlockContextP50Ms: Double
        var auditAppendP50Ms: Double
        var auditAppendsPerSecondAt16: Double
    }

    func run(directory: String, iterations: Int) async throws -> Result {
        let store = try SQLiteStore(path: "\(directory)/probe.sqlite")
        let now = Date()
        let company = Company(id: .generate(), name: "Probe", createdAt: now)
        let user = User(
            id: .generate(), companyID: company.id, email: "probe@probe.test", name: "Probe", role: .admin, securityLevel: 5, enabled: true,
            mustChangePassword: false, createdAt: now, updatedAt: now)
        let audit = AuditEvent(companyID: company.id, at: now, actorID: user.id, action: .createCompany, outcome: .success)
        try await store.createCompany(company, admin: user, passwordHash: "x", audit: audit)
        let room = Room(
            id: .generate(), companyID: company.id, name: "Room", description: "", type: .office, bookable: false, requiredLevel: 1,
            authorizedUsers: [], createdAt: now, updatedAt: now)
        try await store.createRoom(room, audit: audit)
        let lock = LockID("lock-probe")!
        try await store.createLock(Lock(id: lock, companyID: company.id, roomID: room.id, name: "Door", state: .registered, createdAt: now))
        let token = (0..<32).map { UInt8($0) }
        _ = try await store.createSession(
            Session(tokenHash: token, userID: user.id, createdAt: now, expiresAt: now.addingTimeInterval(3600)), verifiedHash: nil)
        let event = AuditEvent(companyID: company.id, at: now, actorID: user.id, action: .unlock, lockID: lock, outcome: .success, reason: "granted")

        func time(_ body: () async throws -> Void) async rethrows -> Samples { try await Samples.timing(iterations, body) }
        let session = try await time { _ = try await store.session(tokenHash: token) }
        let context = try await time { _ = try await store.unlockContext(lock, in: company.id, for: user.id) }
        let append = try await time { try await store.append(event) }
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<16 {
                group.addTask { for _ in 0..<(iterations / 4) { try await store.append(event) } }
            }
            try await group.waitForAll()
        }
        let concurrent = Double(16 * (iterations / 4)) / start.duration(to: .now).seconds
        return Result(
            sessionLookupP50Ms: session.p50.milliseconds, unlockContextP50Ms: context.p50.milliseconds, auditAppendP50Ms: append.p50.milliseconds,
            auditAppendsPerSecondAt16: concurrent)
    }
}
