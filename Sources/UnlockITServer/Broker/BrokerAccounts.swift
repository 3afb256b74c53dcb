import Foundation
import LockProtocol
import Logging
import MQTT
import Synchronization
import UnlockITCore

/// Lock accounts on the broker, through mosquitto's dynamic-security plugin.
///
/// Every lock gets its own MQTT user (its device id, bound to that client id) and a role that allows
/// exactly three things: subscribing to its own `cmd` topic and publishing to its own `evt` and
/// `status` topics. Commands go to `$CONTROL/dynamic-security/v1` as the JSON `mosquitto_ctrl` sends;
/// answers come back on `…/response`, matched by correlation data.
public final class BrokerAccounts: Sendable {
    public static let controlTopic = "$CONTROL/dynamic-security/v1"
    public static let responseTopic = "$CONTROL/dynamic-security/v1/response"
    /// The role the server's own account is given: publish commands to every lock.
    public static let serverRole = "unlockit-server"

    public enum AccountError: Error, CustomStringConvertible {
        case brokerUnavailable
        case timedOut
        case refused(command: String, error: String)
        /// The broker has an account of that name that is not a lock's: the server's own, the
        /// plugin's administrator, or any other the operator made.
        case nameTaken

        public var description: String {
            switch self {
            case .brokerUnavailable: "the MQTT broker is not reachable"
            case .timedOut: "the broker's dynamic-security plugin did not answer"
            case .refused(let command, let error): "the broker refused \(command): \(error)"
            case .nameTaken: "the broker has another account of that name"
            }
        }
    }

    struct Command: Encodable {
        var command: String
        var username: String?
        var password: String?
        var clientid: String?
        var rolename: String?
        var textname: String?
        var acls: [ACL]?
        var roles: [RoleRef]?
        var acltype: String?
        var topic: String?
        var allow: Bool?
        var priority: Int?
        var correlationData: String?

        init(command: String) { self.command = command }
    }

    /// A role's ACL entry; without a topic (and priority), one of the broker's defaults.
    struct ACL: Encodable {
        var acltype: String
        var topic: String?
        var allow: Bool
        var priority: Int? = 0
    }

    struct RoleRef: Codable {
        var rolename: String
        var priority: Int?
    }

    struct Response: Decodable, Sendable {
        var command: String
        var error: String?
        var correlationData: String?
        var data: ResponseData?
    }

    struct ResponseData: Decodable, Sendable {
        struct Client: Decodable, Sendable { var roles: [RoleRef]? }
        struct Role: Decodable, Sendable {
            struct Entry: Decodable, Sendable {
                var acltype: String
                var topic: String
                var allow: Bool
            }
            var acls: [Entry]?
        }
        var client: Client?
        var role: Role?
        /// `getDefaultACLAccess`'s answer: what a client may do that no ACL of its roles mentions.
        struct DefaultACL: Decodable, Sendable {
            var acltype: String
            var allow: Bool
        }
        var acls: [DefaultACL]?
    }

    private struct Envelope: Decodable { var responses: [Response] }

    private let link: any CommandLink
    private let pending = Mutex<[String: CheckedContinuation<[Response], any Error>]>([:])
    private let timeout: Duration
    private let logger: Logger

    init(link: any CommandLink, timeout: Duration = .seconds(5), logger: Logger) {
        self.link = link
        self.timeout = timeout
        self.logger = logger
    }

    static func lockRole(_ lock: LockID) -> String { "unlockit-lock-\(lock.rawValue)" }

    /// 256 random bits, hex: a lock's broker password.
    static func randomPassword() -> String {
        SecureRandom.bytes(32).map { String(format: "%02x", $0) }.joined()
    }

    /// Creates the lock's broker account with the given password. An account left over from an earlier
    /// registration of the same device id (the database forgot it, the broker did not) is replaced;
    /// any other account of that name is left alone and the lock refused with ``AccountError/nameTaken``,
    /// since a device id is whatever an admin of any company types in.
    public func createLockAccount(_ lock: LockID, password: String) async throws {
        let role = Self.lockRole(lock)
        var createRole = Command(command: "createRole")
        createRole.rolename = role
        createRole.textname = "UnlockIT lock \(lock)"
        createRole.acls = [
            ACL(acltype: "subscribeLiteral", topic: Topics.command(lock), allow: true),
            ACL(acltype: "publishClientSend", topic: Topics.event(lock), allow: true),
            ACL(acltype: "publishClientSend", topic: Topics.status(lock), allow: true),
        ]
        var createClient = Command(command: "createClient")
        createClient.username = lock.rawValue
        createClient.clientid = lock.rawValue
        createClient.password = password
        createClient.textname = "UnlockIT lock \(lock)"
        createClient.roles = [RoleRef(rolename: role)]

        let responses = try await run([createRole, createClient])
        guard responses.contains(where: { $0.error?.contains("already exists") == true }) else { return try Self.check(responses) }
        guard try await isLockAccountOrNone(lock) else {
            if responses.first?.error == nil {
                // The role was made just now, for a name that is not ours; take it back.
                var deleteRole = Command(command: "deleteRole")
                deleteRole.rolename = role
                _ = try? await run([deleteRole])
            }
            logger.warning("a device id names another broker account", metadata: ["lock": "\(lock)"])
            throw AccountError.nameTaken
        }
        logger.warning("replacing a stale broker account", metadata: ["lock": "\(lock)"])
        try await deleteLockAccount(lock)
        try Self.check(try await run([createRole, createClient]))
    }

    /// Whether the broker's client of the lock's name is a lock's account (the lock's role and no
    /// other), or there is none.
    private func isLockAccountOrNone(_ lock: LockID) async throws -> Bool {
        var getClient = Command(command: "getClient")
        getClient.username = lock.rawValue
        let current = try await run([getClient])
        if current.first?.error?.contains("not found") == true { return true }
        try Self.check(current)
        return (current.first?.data?.client?.roles ?? []).map(\.rolename) == [Self.lockRole(lock)]
    }

    /// Gives the lock's account a new password. The broker disconnects whoever is connected with the
    /// old one (`modifyClient` enforces its changes by kicking the account's clients), so the old
    /// password stops working at once. An account the broker lost is made again; an account of that
    /// name that is not a lock's is refused with ``AccountError/nameTaken``, as in ``createLockAccount(_:password:)``.
    public func resetLockPassword(_ lock: LockID, password: String) async throws {
        var getClient = Command(command: "getClient")
        getClient.username = lock.rawValue
        let current = try await run([getClient])
        if current.first?.error?.contains("not found") == true {
            logger.warning("the lock's broker account was missing; making it again", metadata: ["lock": "\(lock)"])
            return try await createLockAccount(lock, password: password)
        }
        try Self.check(current)
        guard (current.first?.data?.client?.roles ?? []).map(\.rolename) == [Self.lockRole(lock)] else { throw AccountError.nameTaken }
        var modifyClient = Command(command: "modifyClient")
        modifyClient.username = lock.rawValue
        modifyClient.password = password
        try Self.check(try await run([modifyClient]))
    }

    /// Deletes the lock's account and role; the broker disconnects the lock if it is connected.
    public func deleteLockAccount(_ lock: LockID) async throws {
        var deleteClient = Command(command: "deleteClient")
        deleteClient.username = lock.rawValue
        var deleteRole = Command(command: "deleteRole")
        deleteRole.rolename = Self.lockRole(lock)
        let responses = try await run([deleteClient, deleteRole])
        // Already gone is as good as deleted.
        try Self.check(responses.filter { $0.error?.contains("not found") != true })
    }

    /// What the broker must refuse a client that no ACL of its roles allows (`dynsec init`'s defaults).
    static let deniedByDefault = ["publishClientSend", "subscribe"]

    /// What the server's role allows: publishing commands to every lock, and a lock's retained status
    /// when the broker disconnected the lock without its last will (``LockGateway/brokerDisconnected(_:)``).
    static let serverRoleACLs = [
        ACL(acltype: "publishClientSend", topic: Topics.allCommands, allow: true),
        ACL(acltype: "publishClientSend", topic: Topics.allStatuses, allow: true),
    ]

    /// Gives the server's own account its role, with every ACL of ``serverRoleACLs``, and puts the
    /// broker's default ACL access for ``deniedByDefault`` back to deny. `broker-setup` writes both
    /// into a new site's configuration; this repairs a broker set up another way, or by an earlier
    /// version whose role had fewer ACLs. Idempotent: it looks first, because mosquitto
    /// 2.0 kicks the clients of a role or client it changes, and answers addClientRole with "Internal
    /// error" (the change is made; the next connect finds it).
    public func ensureServerRole(username: String) async throws {
        var getClient = Command(command: "getClient")
        getClient.username = username
        var getRole = Command(command: "getRole")
        getRole.rolename = Self.serverRole
        let current = try await run([getClient, getRole, Command(command: "getDefaultACLAccess")])
        guard current.count == 3 else { throw AccountError.refused(command: "getRole", error: "no answer") }
        try Self.check([current[0], current[2]])

        var changes: [Command] = []
        if current[1].error?.contains("not found") == true {
            var createRole = Command(command: "createRole")
            createRole.rolename = Self.serverRole
            createRole.textname = "UnlockIT server"
            createRole.acls = Self.serverRoleACLs
            changes.append(createRole)
        } else {
            try Self.check([current[1]])
            let present = current[1].data?.role?.acls ?? []
            for acl in Self.serverRoleACLs
            where !present.contains(where: { $0.acltype == acl.acltype && $0.topic == acl.topic && $0.allow == acl.allow }) {
                var addACL = Command(command: "addRoleACL")
                addACL.rolename = Self.serverRole
                addACL.acltype = acl.acltype
                addACL.topic = acl.topic
                addACL.allow = acl.allow
                addACL.priority = acl.priority
                changes.append(addACL)
            }
        }
        if !(current[0].data?.client?.roles ?? []).contains(where: { $0.rolename == Self.serverRole }) {
            var addRole = Command(command: "addClientRole")
            addRole.username = username
            addRole.rolename = Self.serverRole
            changes.append(addRole)
        }
        // Every lock's role allows its own topics only, and relies on the broker refusing the rest: a
        // broker whose defaults let any client publish or subscribe would let a lock read another's
        // commands and answer in its name (forged results, or nonces that make the server an
        // encryption oracle). Put back to deny, whoever set them so.
        let open = (current[2].data?.acls ?? []).filter { Self.deniedByDefault.contains($0.acltype) && $0.allow }.map(\.acltype)
        if !open.isEmpty {
            logger.warning(
                "the broker's default ACL access allowed what every lock's role relies on it to refuse; setting it to deny",
                metadata: ["allowed": "\(open)"])
            var setDefaults = Command(command: "setDefaultACLAccess")
            setDefaults.acls = Self.deniedByDefault.map { ACL(acltype: $0, topic: nil, allow: false, priority: nil) }
            changes.append(setDefaults)
        }
        guard !changes.isEmpty else { return }
        logger.info("giving the server's broker account its role", metadata: ["changes": "\(changes.map(\.command))"])
        try Self.check(try await run(changes))
    }

    private static func check(_ responses: [Response]) throws {
        if let failed = responses.first(where: { $0.error != nil }) {
            throw AccountError.refused(command: failed.command, error: failed.error ?? "")
        }
    }

    /// Sends the commands in one control message and waits for the broker's answers.
    func run(_ commands: [Command]) async throws -> [Response] {
        guard link.isConnected else { throw AccountError.brokerUnavailable }
        let batch = UUID().uuidString
        var tagged = commands
        for index in tagged.indices { tagged[index].correlationData = "\(batch)/\(index)" }
        struct Message: Encodable { var commands: [Command] }
        let payload = Array(try JSONEncoder().encode(Message(commands: tagged)))
        let timeout = self.timeout
        return try await withThrowingTaskGroup(of: [Response].self) { group in
            group.addTask {
                // The wait ends with the answer, the timeout or the caller's cancellation, whichever
                // comes first: a wait only an answer could end would hold the group, and with it the
                // caller's turn on the lock's account, for good once the answer is lost.
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { continuation in
                        self.pending.withLock { $0[batch] = continuation }
                        // Cancelled before the wait was there to end: the handler found nothing.
                        if Task.isCancelled { return self.endWait(batch, CancellationError()) }
                        do {
                            // QoS 0: at QoS 1 a command whose answer never came (a dropped link, a timeout) would
                            // be sent again after the reconnect, after this call had reported it failed,
                            // and the broker's accounts would drift from the database's.
                            try self.link.publish(topic: Self.controlTopic, payload: payload, qos: .atMostOnce, retain: false)
                        } catch {
                            self.endWait(batch, AccountError.brokerUnavailable)
                        }
                    }
                } onCancel: {
                    self.endWait(batch, CancellationError())
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                self.endWait(batch, AccountError.timedOut)
                throw AccountError.timedOut
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// Ends the wait for `batch`'s answer with `error`, unless it has ended already.
    private func endWait(_ batch: String, _ error: any Error) {
        pending.withLock { $0.removeValue(forKey: batch) }?.resume(throwing: error)
    }

    /// Handles a message on ``responseTopic`` (MQTT event loop thread).
    public func handle(_ message: MQTTMessage) {
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: Data(message.payload)),
            let batch = envelope.responses.first?.correlationData?.split(separator: "/").first.map(String.init)
        else {
            logger.warning("could not read a dynamic-security response")
            return
        }
        pending.withLock { $0.removeValue(forKey: batch) }?.resume(returning: envelope.responses)
    }
}
