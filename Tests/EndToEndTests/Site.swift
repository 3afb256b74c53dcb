import Foundation
import MQTT
import SiteHarness

/// A complete local site for one test: a real mosquitto, a real server process on a fresh SQLite
/// file, a bootstrapped company with a signed-in admin, and one room.
struct Site {
    let directory: TemporaryDirectory
    let broker: TestBroker
    let server: TestServer
    let admin: String
    let roomID: String
    /// How the site's locks name the broker: the server too, unless the site's locks use TLS.
    let brokerURL: String
    /// The authority and certificates of a site whose locks reach the broker over TLS.
    let certificates: TestCertificates?

    var api: APIClient { server.api }

    /// - Parameter brokerHost: how the server and the locks name the broker's host.
    /// - Parameter tls: the broker has a TLS listener too, which the locks are told of and use
    ///   (``brokerURL``), while the server stays on the loopback one without TLS, unless
    ///   `serverOverTLS`.
    static func start(
        serverEnvironment: [String: String] = [:], requiredLevel: Int = 3, brokerHost: String = "127.0.0.1", tls: Bool = false,
        serverOverTLS: Bool = false
    ) async throws -> Site {
        let directory = try TemporaryDirectory("unlockit-e2e")
        let certificates = tls ? try await TestCertificates.make(in: directory.path + "/pki") : nil
        let broker = try await TestBroker.start(in: directory.path, certificates: certificates)
        let serverURL = "mqtt://\(brokerHost):\(broker.port)"
        let brokerURL = tls ? "mqtts://\(brokerHost):\(broker.tlsPort!)" : serverURL
        var environment = serverEnvironment
        environment["UNLOCKIT_MQTT_URL"] = serverOverTLS ? brokerURL : serverURL
        if tls { environment["UNLOCKIT_LOCK_BROKER_URL"] = brokerURL }
        if serverOverTLS, let certificates { environment["UNLOCKIT_MQTT_CA_FILE"] = certificates.authorityFile }
        let server = try await TestServer.start(broker: broker, directory: directory.path, extra: environment)
        let admin = try await server.adminSession(company: "Site", email: "operator@site.test")
        let room = try await server.api.post("/api/v1/rooms", token: admin, ["name": "Lab", "type": "office", "requiredLevel": requiredLevel])
        guard room.status == 201, let roomID = room.string("id") else { throw HarnessError("room: \(room)") }
        return Site(
            directory: directory, broker: broker, server: server, admin: admin, roomID: roomID, brokerURL: brokerURL, certificates: certificates)
    }

    /// Runs `body` with a fresh site and always stops the site's processes afterwards, so that no
    /// broker or server outlives its test.
    static func with(
        serverEnvironment: [String: String] = [:], requiredLevel: Int = 3, brokerHost: String = "127.0.0.1", tls: Bool = false,
        serverOverTLS: Bool = false, _ body: (Site) async throws -> Void
    ) async throws {
        let site = try await start(
            serverEnvironment: serverEnvironment, requiredLevel: requiredLevel, brokerHost: brokerHost, tls: tls, serverOverTLS: serverOverTLS)
        do {
            try await body(site)
        } catch {
            await site.shutdown()
            throw error
        }
        await site.shutdown()
    }

    /// Registers a lock through the API and boots its simulator; returns it with its broker password.
    func registerLock(_ id: String, room: String? = nil) async throws -> (lock: TestLock, password: String) {
        let lock = try await TestLock(id: id, directory: directory.path)
        let reply = try await api.post("/api/v1/locks", token: admin, ["id": id, "name": "Door \(id)", "roomId": room ?? roomID])
        guard reply.status == 201, let mqtt = reply.json["mqtt"] as? [String: any Sendable], let password = mqtt["password"] as? String else {
            throw HarnessError("register: \(reply)")
        }
        return (lock, password)
    }

    /// Registers, starts in pairing mode, and activates a lock.
    func activeLock(_ id: String, arguments: [String] = [], room: String? = nil) async throws -> (lock: TestLock, password: String) {
        let (lock, password) = try await registerLock(id, room: room)
        try await lock.start(broker: brokerURL, password: password, pairing: true, arguments: arguments)
        try await waitUntilOnline(id)
        let reply = try await api.post("/api/v1/locks/\(id)/activate", token: admin, ["setupCode": lock.setupCode])
        guard reply.status == 200 else { throw HarnessError("activate: \(reply)") }
        return (lock, password)
    }

    /// Starts `lock`, registered by `reply`, in pairing mode (with `arguments`), activates it with its
    /// setup code, and opens it once as the site's admin.
    func activateAndOpen(_ lock: TestLock, registered reply: APIClient.Reply, arguments: [String] = []) async throws {
        guard reply.status == 201, let password = (reply.json["mqtt"] as? [String: any Sendable])?["password"] as? String else {
            throw HarnessError("register: \(reply)")
        }
        try await lock.start(broker: brokerURL, password: password, pairing: true, arguments: arguments)
        try await waitUntilOnline(lock.id)
        let activated = try await api.post("/api/v1/locks/\(lock.id)/activate", token: admin, ["setupCode": lock.setupCode])
        guard activated.status == 200 else { throw HarnessError("activate: \(activated)") }
        try await authorizeAdmin()
        let opened = try await unlock(lock.id)
        guard opened.status == 200, opened.json["granted"] as? Bool == true else { throw HarnessError("unlock: \(opened)") }
    }

    /// Waits until the lock of `id` (the site's, or that of the company `token` signs in to) is online, or offline.
    func waitUntilOnline(_ id: String, _ online: Bool = true, token: String? = nil, timeout: Duration = .seconds(10)) async throws {
        try await Network.waitUntil("\(id) online=\(online)", timeout: timeout) {
            (try await api.get("/api/v1/locks/\(id)", token: token ?? admin).json["online"] as? Bool) == online
        }
    }

    /// An employee (first-login change done) with a security level; returns their id and token.
    func employee(_ email: String, level: Int) async throws -> (id: String, token: String) {
        let reply = try await api.post(
            "/api/v1/users", token: admin,
            ["email": email, "name": email, "role": "employee", "securityLevel": level, "password": "initial password 1"])
        guard reply.status == 201, let user = reply.json["user"] as? [String: any Sendable], let id = user["id"] as? String else {
            throw HarnessError("create user: \(reply)")
        }
        return (id, try await api.signIn(email: email, password: "initial password 1", newPassword: "my own password 1"))
    }

    /// Makes the admin able to open the site's room (level 0 is below the room's level).
    func authorizeAdmin() async throws {
        let me = try await api.get("/api/v1/me", token: admin)
        let id = (me.json["user"] as? [String: any Sendable])?["id"] as? String ?? ""
        let reply = try await api.call("PUT", "/api/v1/rooms/\(roomID)/authorized-users/\(id)", token: admin)
        guard reply.status == 200 else { throw HarnessError("authorize: \(reply)") }
    }

    func unlock(_ id: String, token: String? = nil) async throws -> APIClient.Reply {
        try await api.post("/api/v1/locks/\(id)/unlock", token: token ?? admin)
    }

    /// Another company on the site (`unlockit-server bootstrap`, its admin signed in as
    /// `admin@<name>.test`) with one room: its admin's token and the room's id.
    func otherCompany(_ name: String, room: String = "Hall", requiredLevel: Int? = nil) async throws -> (admin: String, room: String) {
        let admin = try await server.adminSession(company: name, email: "admin@\(name.lowercased()).test")
        var body: [String: any Sendable] = ["name": room, "type": "office"]
        if let requiredLevel { body["requiredLevel"] = requiredLevel }
        let reply = try await api.post("/api/v1/rooms", token: admin, body)
        guard reply.status == 201, let id = reply.string("id") else { throw HarnessError("room: \(reply)") }
        return (admin, id)
    }

    /// Waits until the broker refuses a connection as lock `id` (its client id and user name) with
    /// `password`: "not authorised", CONNACK 5 (an account gone, or its password replaced).
    func waitUntilRefused(lock id: String, password: String) async throws {
        let refusals = LockedBox<[MQTTConnectionEvent]>([])
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(host: "127.0.0.1", port: broker.port, clientID: id, username: id, password: password),
            onConnectionEvent: { event in refusals.set(refusals.get() + [event]) })
        client.start()
        do {
            try await Network.waitUntil("\(id)'s password refused") { refusals.get().contains(.refused(code: 5)) }
        } catch {
            await client.shutdown()
            throw error
        }
        let connected = client.isConnected
        await client.shutdown()
        guard !connected else { throw HarnessError("\(id) connected after a refusal") }
    }

    /// A client connected as the registered lock `id` with its broker password, as its device would
    /// be, and the connection's events as they come.
    func device(_ id: String, password: String) async throws -> (client: MQTTClient, events: LockedBox<[MQTTConnectionEvent]>) {
        let events = LockedBox<[MQTTConnectionEvent]>([])
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(host: "127.0.0.1", port: broker.port, clientID: id, username: id, password: password),
            onConnectionEvent: { event in events.set(events.get() + [event]) })
        client.start()
        try await client.waitUntilConnected(timeout: .seconds(30))
        return (client, events)
    }

    /// Creates the broker account for ``superuser(_:)``; once per site.
    func addSuperuserAccount() async throws {
        try await broker.addSuperuser(username: "tester", password: "superuser password")
    }

    /// A broker client that may publish and subscribe anywhere (``addSuperuserAccount()`` first).
    func superuser(_ name: String = "tester") async throws -> MQTTClient {
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(
                host: "127.0.0.1", port: broker.port, clientID: "\(name)-\(UUID().uuidString.prefix(6))", username: "tester",
                password: "superuser password"))
        client.start()
        try await client.waitUntilConnected(timeout: .seconds(30))
        return client
    }

    /// The lock's retained status as a new subscriber gets it from the broker, `nil` for none
    /// (``addSuperuserAccount()`` first). A probe message sent after the subscription is answered
    /// comes after any retained message on the same connection, so "none" needs no waiting.
    func retainedStatus(of lock: String) async throws -> [UInt8]? {
        let watcher = try await superuser("retained")
        let probe = "test/probe/\(UUID().uuidString)"
        let status = "unlockit/v1/locks/\(lock)/status"
        try await watcher.subscribe(probe)
        try await watcher.subscribe(status)
        try watcher.publish(topic: probe, payload: Array("probe".utf8))
        var found: [UInt8]?
        for await message in watcher.messages {
            if message.topic == probe { break }
            if message.topic == status { found = message.payload }
        }
        await watcher.shutdown()
        return found
    }

    func shutdown() async {
        await server.stop()
        await broker.stop()
        directory.remove()
    }
}

extension TestLock {
    /// The lock's counters, from its `stats` command.
    func stats() async throws -> [String: Int] {
        guard let process else { throw HarnessError("lock not running") }
        let before = process.output.count
        process.send("stats")
        let line = try await process.waitForLine(containing: "stats openings=", after: before)
        var counters: [String: Int] = [:]
        for field in line.split(separator: " ") where field.contains("=") {
            let parts = field.split(separator: "=")
            if let value = Int(parts[1]) { counters[String(parts[0])] = value }
        }
        return counters
    }

    /// The device key from the lock's flash: a test may read the simulator's flash, an attacker may not.
    func deviceKey() throws -> [UInt8] {
        let data = try Data(contentsOf: URL(fileURLWithPath: statePath))
        let json = try JSONSerialization.jsonObject(with: data) as? [String: any Sendable]
        let hex = json?["deviceKey"] as? String ?? ""
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}

extension MQTTClient {
    /// Subscribes to `topics` and collects every message from now on. Call once per client: the
    /// client's message stream has a single reader.
    func record(_ topics: String...) async throws -> MessageRecorder {
        let recorder = MessageRecorder()
        Task { [messages] in
            for await message in messages { recorder.append(message) }
        }
        for topic in topics { try await subscribe(topic) }
        return recorder
    }
}

final class MessageRecorder: Sendable {
    private let box = LockedBox<[MQTTMessage]>([])

    func append(_ message: MQTTMessage) { box.set(box.get() + [message]) }
    var messages: [MQTTMessage] { box.get() }
    var payloads: [String] { messages.map { String(decoding: $0.payload, as: UTF8.self) } }

    func payloads(on topic: String) -> [String] {
        messages.filter { $0.topic == topic }.map { String(decoding: $0.payload, as: UTF8.self) }
    }

    func waitFor(_ what: String, timeout: Duration = .seconds(5), _ predicate: @escaping @Sendable (String) -> Bool) async throws -> String {
        var found: String?
        try await Network.waitUntil(what, timeout: timeout) {
            found = payloads.first(where: predicate)
            return found != nil
        }
        return found!
    }
}
