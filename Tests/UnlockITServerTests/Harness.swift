import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LockProtocol
import Logging
import MQTT
import NIOCore
import SiteHarness
import Synchronization
import UnlockITCore
import UnlockITStore

@testable import UnlockITServer

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var serverClock: ServerClock { ServerClock(now: { self.now }) }
}

/// The server application on a real SQLite file, tested through its router (HummingbirdTesting).
/// Its broker address points at a closed port: unlocks that pass the access rule end in
/// `broker_unavailable`, which tells the tests exactly that the rule allowed them.
struct Harness {
    let directory: TemporaryDirectory
    let store: SQLiteStore
    let clock = TestClock()
    let masterKey: MasterKey
    var configuration: ServerConfiguration

    init(auditCapacity: Int = 10_000, _ adjust: (inout ServerConfiguration) -> Void = { _ in }) throws {
        directory = try TemporaryDirectory("unlockit-server")
        store = try SQLiteStore(path: "\(directory.path)/unlockit.sqlite", auditCapacity: auditCapacity)
        masterKey = try MasterKey(bytes: Array(repeating: 7, count: 32))
        configuration = ServerConfiguration()
        configuration.databasePath = "\(directory.path)/unlockit.sqlite"
        configuration.mqttURL = "mqtt://127.0.0.1:\(try Network.freePort())"
        configuration.mqttPassword = "unused"
        // Tests run at once, each with its own operations listener.
        configuration.operationsPort = 0
        configuration.bcryptCost = Self.bcryptCost
        adjust(&configuration)
    }

    /// bcrypt's cost in these tests: below the 12 a server accepts, a quarter of its CPU. The suite
    /// runs its tests at once, each sign-in a hash on a thread at nice 10; at 12 their sum kept the
    /// cores busy for most of a run and left a waiting sign-in's hash far behind the other work.
    /// What depends on the cost itself (raising it, the queue) is tested against this one.
    static let bcryptCost = 10

    /// Validates the configuration as a server does at start-up, at the bcrypt cost a server
    /// requires (the harness's own is below it).
    func validateAsServer() throws {
        var checked = configuration
        checked.bcryptCost = ServerConfiguration().bcryptCost
        try checked.validate()
    }

    static let logger: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }()

    /// `live`: over a real connection from 127.0.0.1 (a client address, as behind a proxy), not
    /// straight into the router.
    func run(live: Bool = false, _ body: @Sendable (API) async throws -> Void) async throws {
        let app = try UnlockITApp.build(
            .init(configuration: configuration, store: store, masterKey: masterKey, clock: clock.serverClock, logger: Self.logger))
        try await app.test(live ? .live : .router) { client in try await body(API(client: client, harness: self)) }
    }

    /// Runs `body` while another connection has executed `sql` on the database and holds its commit
    /// for `holding`: what `body` starts reads the database as it was, and a write it makes waits for
    /// the commit and then finds the change. A change made while a request is half-way, deterministically.
    func whileUncommitted<T: Sendable>(
        _ sql: String, _ arguments: [String], holding: Duration = .milliseconds(500), _ body: @Sendable () async throws -> T
    ) async throws -> T {
        let database = try DatabaseQueue(path: configuration.databasePath)
        // The other connection's thread commits by itself once `holding` has passed: the request's
        // write waits for it blocking a thread of the cooperative pool, which a commit that waited
        // for a task of the test could then starve.
        let state = Mutex<(changed: Bool, done: Bool, failure: String?)>((false, false, nil))
        Thread.detachNewThread {
            do {
                try database.writeWithoutTransaction { db in
                    try db.execute(sql: "BEGIN IMMEDIATE")
                    try db.execute(sql: sql, arguments: StatementArguments(arguments))
                    guard db.changesCount > 0 else { throw HarnessError("the change changed nothing: \(sql)") }
                    state.withLock { $0.changed = true }
                    Thread.sleep(forTimeInterval: Double(holding.components.seconds) + Double(holding.components.attoseconds) / 1e18)
                    try db.execute(sql: "COMMIT")
                }
            } catch {
                state.withLock { $0.failure = "\(error)" }
            }
            state.withLock { $0.done = true }
        }
        try await Network.waitUntil("the other connection's change") { state.withLock { $0.changed || $0.done } }
        if let failure = state.withLock({ $0.failure }) { throw HarnessError(failure) }
        let value = try await body()
        try await Network.waitUntil("the other connection's commit") { state.withLock { $0.done } }
        if let failure = state.withLock({ $0.failure }) { throw HarnessError(failure) }
        return value
    }

    /// Runs `body` against the router alone over `services`, which the test holds too (their turns,
    /// their limiters); the broker is never reached.
    func run(over services: AppServices, _ body: @Sendable (API) async throws -> Void) async throws {
        let app = Application(router: UnlockITApp.buildRouter(services: services))
        try await app.test(.router) { client in try await body(API(client: client, harness: self)) }
    }

    /// Runs `body` against the operations listener's router alone (`/healthz`, `/metrics`).
    func runOperations(brokerReady: @escaping @Sendable () -> Bool = { false }, _ body: @Sendable (API) async throws -> Void) async throws {
        let app = Application(router: UnlockITApp.buildOperationsRouter(services: try services(), brokerReady: brokerReady))
        try await app.test(.router) { client in try await body(API(client: client, harness: self)) }
    }

    /// The controllers' shared services, for tests that build the router directly; `accounts`, a
    /// broker's accounts API of the test's (else one whose broker is never reached).
    func services(accounts: BrokerAccounts? = nil) throws -> AppServices {
        let link = try BrokerLink(
            address: .init(host: "127.0.0.1", port: 1), username: "u", password: "p", store: store, unlockTimeout: .seconds(1),
            metrics: ServerMetrics(), logger: Self.logger, clock: clock.serverClock)
        return AppServices(
            store: store, clock: clock.serverClock, hasher: PasswordHasher(cost: configuration.bcryptCost, concurrency: 1),
            signInLimiter: SignInLimiter(perHour: 100, lockoutThreshold: 5, lockoutSeconds: 60),
            clientLimiter: RateLimiter(perMinute: configuration.signInsPerClientPerMinute),
            unlockLimiter: RateLimiter(perMinute: configuration.unlocksPerUserPerMinute),
            deniedUnlockLimiter: DeniedUnlockLimiter(perMinute: configuration.deniedUnlocksPerMinute),
            takenEmailLimiter: CompanyDailyBudget(perDay: configuration.takenEmailsPerDay),
            takenLockIDLimiter: CompanyDailyBudget(perDay: configuration.takenLockIDsPerDay),
            wrongSetupCodeLimiter: CompanyDailyBudget(perDay: configuration.wrongSetupCodesPerDay),
            lockIDLapse: configuration.lockIDLapse, trustedProxies: [],
            oidc: OIDCVerifier(issuers: [], clock: clock.serverClock, logger: Self.logger), tokenLifetime: 3600, gateway: link.gateway,
            accounts: accounts ?? link.accounts, sealer: KeySealer(masterKey: masterKey), metrics: ServerMetrics(), logger: Self.logger, brokerURL: ""
        )
    }

    /// A company and its admin, whose initial password is returned.
    func bootstrap(_ company: String, email: String) async throws -> String {
        try await bootstrapCompany(company, email: email).password
    }

    /// A company and its admin: the company's id and the admin's initial password, hashed at the
    /// configured cost (so that signing in does not hash it again at another).
    func bootstrapCompany(_ company: String, email: String) async throws -> (id: CompanyID, password: String) {
        let (created, password) = try await CompanyBootstrap(
            store: store, hasher: PasswordHasher(cost: configuration.bcryptCost, concurrency: 2), clock: clock.serverClock
        ).run(companyName: company, adminEmail: email, adminName: "Admin")
        return (created.id, password)
    }

    /// Makes `id` an active lock of `company` in `room`, with a random key, straight in the store
    /// (no lock is there to pair: unlocks that pass the rule end in `broker_unavailable`).
    func activeLock(_ id: String, company: CompanyID, room: String) async throws -> LockID {
        let lockID = LockID(id)!
        try await store.createLock(
            Lock(id: lockID, companyID: company, roomID: RoomID(room)!, name: "Door", state: .registered, createdAt: clock.now))
        let sealed = try KeySealer(masterKey: masterKey).seal(.random(), for: lockID)
        let audit = AuditEvent(companyID: company, at: clock.now, actorID: nil, action: .activateLock, outcome: .success)
        try await store.activateLock(lockID, in: company, sealedKey: sealed, at: clock.now, audit: audit)
        return lockID
    }
}

/// JSON calls through the router.
struct API: Sendable {
    let client: any TestClientProtocol
    let harness: Harness

    struct Reply: Sendable, CustomStringConvertible {
        let status: Int
        let body: Data
        let contentType: String?
        var headers: HTTPFields = [:]
        var json: [String: any Sendable] { (try? JSONSerialization.jsonObject(with: body) as? [String: any Sendable]) ?? [:] }
        var items: [[String: any Sendable]] { json["items"] as? [[String: any Sendable]] ?? [] }
        func string(_ key: String) -> String? { json[key] as? String }
        var code: String? { string("code") }
        var text: String { String(decoding: body, as: UTF8.self) }
        var description: String { "\(status) \(text.prefix(400))" }
    }

    func call(
        _ method: HTTPRequest.Method, _ path: String, token: String? = nil, json: [String: any Sendable]? = nil, raw: String? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> Reply {
        var headers = extra
        if let token { headers[.authorization] = "Bearer \(token)" }
        var body: ByteBuffer?
        if let json {
            headers[.contentType] = "application/json"
            body = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json))
        } else if let raw {
            headers[.contentType] = "application/json"
            body = ByteBuffer(string: raw)
        }
        let response = try await client.executeRequest(uri: path, method: method, headers: headers, body: body)
        return Reply(
            status: response.status.code, body: Data(response.body.readableBytesView), contentType: response.headers[.contentType],
            headers: response.headers)
    }

    func get(_ path: String, _ token: String? = nil) async throws -> Reply { try await call(.get, path, token: token) }
    func post(_ path: String, _ token: String? = nil, _ json: [String: any Sendable] = [:]) async throws -> Reply {
        try await call(.post, path, token: token, json: json)
    }

    func signIn(_ email: String, _ password: String) async throws -> Reply {
        try await post("/api/v1/auth/sign-in", nil, ["email": email, "password": password])
    }

    /// `POST /api/v1/me/password` in the session `token`, giving `current` as the current password.
    func changePassword(_ token: String, from current: String, to new: String = "another new password 2") async throws -> Reply {
        try await post("/api/v1/me/password", token, ["currentPassword": current, "newPassword": new])
    }

    /// Signs in and, if asked to, replaces the initial password. Returns the token.
    func session(_ email: String, _ password: String, newPassword: String = "a brand new password") async throws -> String {
        let reply = try await signIn(email, password)
        guard reply.status == 200, let token = reply.string("token") else { throw HarnessError("sign-in: \(reply)") }
        if reply.json["mustChangePassword"] as? Bool == true {
            let changed = try await changePassword(token, from: password, to: newPassword)
            guard changed.status == 204 else { throw HarnessError("password change: \(changed)") }
        }
        return token
    }

    /// A company with a signed-in admin.
    func company(_ name: String) async throws -> String {
        let email = "admin@\(name.lowercased()).test"
        return try await session(email, try await harness.bootstrap(name, email: email))
    }

    func createUser(_ admin: String, _ email: String, level: Int = 0, role: String = "employee", password: String = "initial password 1") async throws
        -> String
    {
        let reply = try await post(
            "/api/v1/users", admin, ["email": email, "name": email, "role": role, "securityLevel": level, "password": password])
        guard reply.status == 201, let user = reply.json["user"] as? [String: any Sendable], let id = user["id"] as? String else {
            throw HarnessError("create user: \(reply)")
        }
        return id
    }

    func createRoom(_ admin: String, _ name: String, requiredLevel: Int? = 1) async throws -> String {
        var body: [String: any Sendable] = ["name": name, "type": "office"]
        if let requiredLevel { body["requiredLevel"] = requiredLevel }
        let reply = try await post("/api/v1/rooms", admin, body)
        guard reply.status == 201, let id = reply.string("id") else { throw HarnessError("create room: \(reply)") }
        return id
    }
}
