import Foundation
import MQTT
import UnlockITCore

/// Everything the server can be told, from an optional JSON file and then the environment
/// (`UNLOCKIT_…` variables win). See docs/operations.md for the full list.
public struct ServerConfiguration: Sendable, Equatable {
    public var databasePath = "unlockit.sqlite"
    public var httpHost = "127.0.0.1"
    /// 0 picks a free port (the server logs the one it bound).
    public var httpPort = 8080
    /// Where `/healthz` and `/metrics` listen: their own address, so that the API's, which faces the
    /// world, answers nothing without a session but sign-in and the OpenAPI document. Their figures
    /// span every company.
    public var operationsHost = "127.0.0.1"
    /// 0 picks a free port (the server logs the one it bound).
    public var operationsPort = 8081
    public var mqttURL = "mqtt://127.0.0.1:1883"
    /// The authorities (PEM) the broker's certificate must chain to when `mqttURL` is `mqtts://`;
    /// `nil` for the system's.
    public var mqttCAFile: String?
    /// The broker's address as the locks reach it, given with a lock's broker account; `nil` for
    /// `mqttURL`. The server may reach the broker on loopback while locks on the network reach its
    /// TLS listener.
    public var lockBrokerURL: String?
    public var mqttUsername = "unlockit-server"
    public var mqttPassword: String?
    public var mqttPasswordFile: String?
    /// The master key itself (64 hex digits or base64); environment only, never in a file of settings.
    public var masterKey: String?
    /// Where the master key lives; created (0600) on first start. Defaults to `master.key` beside the database.
    public var masterKeyFile: String?
    /// Seconds a session token stays valid.
    public var tokenLifetime = 8 * 3600
    public var bcryptCost = 12
    /// How many bcrypt hashes may run at once: sign-in storms must not starve unlocks.
    public var bcryptConcurrency = 1
    /// How many more may wait for their turn; beyond that the server answers 503 `server_busy`.
    public var bcryptQueue = 8
    /// Seconds to wait for a lock's answer.
    public var unlockTimeout = 3.0
    /// Seconds an HTTP connection may stay silent, between requests or while sending one's head or
    /// body, before the server closes it: slow or idle clients must not hold connections for ever.
    public var httpIdleTimeout = 30
    /// Seconds a request may take to arrive whole, from its first line to the end of its body: a
    /// client that sends a byte now and then is never idle, and must not hold a connection for ever.
    /// Also how long an answer may wait unread, the connection's writes blocked, before it is closed.
    public var httpRequestTimeout = 60
    /// Connections one client (an IPv4 address, an IPv6 /64) may hold at once; a trusted proxy's are
    /// not counted. More are closed as they open.
    public var httpConnectionsPerClient = 512
    /// Connections each listener may hold at once, from all clients together (a trusted proxy's
    /// included): many clients must not take every descriptor the process has. More are closed as
    /// they open.
    public var httpConnections = 4096
    public var signInFailuresPerHour = 100
    /// Consecutive failures that lock an account for ``lockoutSeconds``.
    public var lockoutThreshold = 5
    public var lockoutSeconds = 60
    /// Sign-in attempts (password or OpenID Connect) one client may make in a minute, in a burst or
    /// spread out; more are answered 429 `too_many_requests`.
    public var signInsPerClientPerMinute = 30
    /// Denied unlock attempts one user may have in a minute; beyond that their unlocks are answered
    /// 429 `too_many_denied_unlocks` until the oldest is a minute old (``DeniedUnlockLimiter``).
    public var deniedUnlocksPerMinute = 10
    /// Unlock attempts one user may make in a minute, in a burst or spread out, whatever their
    /// outcome; more are answered 429 `too_many_unlocks` (``RateLimiter``). Each attempt is an audit
    /// event kept for good.
    public var unlocksPerUserPerMinute = 60
    /// Messages one lock's broker account may send unasked in a minute (statuses, relay states,
    /// malformed events, answers to nothing waiting; not the answers that take one of the server's
    /// exchanges a step further), in a burst or spread out (``RateLimiter``). A lock that sends more
    /// has them ignored and its broker account given a password nobody holds, until an admin asks
    /// for a new one (``LockFloodGuard``): every lock's messages reach the server through one
    /// connection, so one account's flood must not delay the others'.
    public var lockMessagesPerMinute = 600
    /// Email addresses in use by other companies that one company's admins may be told of in a day
    /// (creating, importing or renaming users); beyond that such requests are answered 429
    /// `too_many_taken_emails` (``CompanyDailyBudget``).
    public var takenEmailsPerDay = 20
    /// Lock device ids registered by other companies that one company's admins may be told of in a
    /// day (registering locks); beyond that registrations are answered 429 `too_many_taken_lock_ids`
    /// (``CompanyDailyBudget``).
    public var takenLockIDsPerDay = 20
    /// Wrong setup codes one company's admins may give in a day, registering factory device ids and
    /// activating locks; beyond that both are answered 429 `too_many_wrong_setup_codes`
    /// (``CompanyDailyBudget``). Each wrong code is an audit event.
    public var wrongSetupCodesPerDay = 50
    /// Seconds a lock not in service (registered and never activated, or retired) keeps its device id
    /// from other companies; after that, another company may register the id, and the lock goes to
    /// it (``LockIDClaim``). A registration proves nothing, so one made first by someone who only
    /// read the label keeps the id from its owner no longer than this.
    public var lockIDLapse = 86400
    /// Reverse proxies whose `X-Forwarded-For` names the client (IP addresses).
    public var trustedProxies: [String] = []
    public var oidcIssuers: [OIDCIssuer] = []
    public var logLevel = "info"

    /// An OpenID Connect issuer whose ID tokens may sign users in.
    public struct OIDCIssuer: Sendable, Equatable, Codable {
        /// The `iss` claim, exactly.
        public var issuer: String
        /// Accepted `aud` values: the client ids of UnlockIT at this issuer.
        public var clientIDs: [String]
        /// A JWKS file, or
        public var jwksFile: String?
        /// a JWKS URL (fetched at start and refreshed hourly).
        public var jwksURL: String?
        /// Accepted signature algorithms; `none` and HMAC are never accepted.
        public var algorithms: [String]?
        /// The ids of the companies whose users this issuer may sign in, or ``everyCompany`` alone
        /// for every company's. Required: an issuer vouches for every email it signs (a public one,
        /// such as a mail provider's, for anyone's), so one company's choice of identity provider
        /// must not sign in another company's users, also one bootstrapped later.
        public var companies: [String]?

        /// `companies: ["*"]`: the issuer signs in every company's users.
        public static let everyCompany = "*"

        /// The companies this issuer signs in: nil for every company, none without `companies`
        /// (the server does not start then; deny by default all the same).
        public var signedInCompanies: Set<CompanyID>? {
            guard let companies else { return [] }
            if companies == [Self.everyCompany] { return nil }
            return Set(companies.compactMap(CompanyID.init))
        }

        public init(
            issuer: String, clientIDs: [String], jwksFile: String? = nil, jwksURL: String? = nil, algorithms: [String]? = nil,
            companies: [String]? = nil
        ) {
            self.issuer = issuer
            self.clientIDs = clientIDs
            self.jwksFile = jwksFile
            self.jwksURL = jwksURL
            self.algorithms = algorithms
            self.companies = companies
        }

        private enum CodingKeys: String, CodingKey, CaseIterable {
            case issuer, clientIDs, jwksFile, jwksURL, algorithms, companies
        }

        /// Any name an issuer's entry holds, to find the unknown ones.
        private struct AnyKey: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        /// Decoded strictly, as the settings file is: a misspelt setting is refused, not ignored (a
        /// misspelt `algorithms` would allow every algorithm).
        public init(from decoder: any Decoder) throws {
            let known = Set(CodingKeys.allCases.map(\.rawValue))
            if let unknown = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue).sorted().first(where: { !known.contains($0) }) {
                throw ConfigurationError("unknown OIDC issuer setting \"\(unknown)\"")
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                issuer: try container.decode(String.self, forKey: .issuer), clientIDs: try container.decode([String].self, forKey: .clientIDs),
                jwksFile: try container.decodeIfPresent(String.self, forKey: .jwksFile),
                jwksURL: try container.decodeIfPresent(String.self, forKey: .jwksURL),
                algorithms: try container.decodeIfPresent([String].self, forKey: .algorithms),
                companies: try container.decodeIfPresent([String].self, forKey: .companies))
        }
    }

    public init() {}

    public struct ConfigurationError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The file's settings (if any), overridden by the environment, then validated.
    public static func load(file: String?, environment: [String: String]) throws -> ServerConfiguration {
        var configuration = ServerConfiguration()
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else { throw ConfigurationError("cannot read \(file)") }
            try configuration.apply(file: data, name: file)
        }
        try configuration.apply(environment: environment)
        try configuration.validate()
        return configuration
    }

    private struct FileSettings: Decodable {
        var databasePath: String?
        var httpHost: String?
        var httpPort: Int?
        var operationsHost: String?
        var operationsPort: Int?
        var mqttURL: String?
        var mqttCAFile: String?
        var lockBrokerURL: String?
        var mqttUsername: String?
        var mqttPasswordFile: String?
        var masterKeyFile: String?
        var tokenLifetime: Int?
        var bcryptCost: Int?
        var bcryptConcurrency: Int?
        var bcryptQueue: Int?
        var unlockTimeout: Double?
        var httpIdleTimeout: Int?
        var httpRequestTimeout: Int?
        var httpConnectionsPerClient: Int?
        var httpConnections: Int?
        var signInFailuresPerHour: Int?
        var lockoutThreshold: Int?
        var lockoutSeconds: Int?
        var signInsPerClientPerMinute: Int?
        var deniedUnlocksPerMinute: Int?
        var unlocksPerUserPerMinute: Int?
        var lockMessagesPerMinute: Int?
        var takenEmailsPerDay: Int?
        var takenLockIDsPerDay: Int?
        var wrongSetupCodesPerDay: Int?
        var lockIDLapse: Int?
        var trustedProxies: [String]?
        var oidcIssuers: [OIDCIssuer]?
        var logLevel: String?

        static let keys: Set<String> = [
            "databasePath", "httpHost", "httpPort", "operationsHost", "operationsPort", "mqttURL", "mqttCAFile", "lockBrokerURL", "mqttUsername",
            "mqttPasswordFile",
            "masterKeyFile", "tokenLifetime", "bcryptCost", "bcryptConcurrency", "bcryptQueue", "unlockTimeout", "httpIdleTimeout",
            "httpRequestTimeout", "httpConnectionsPerClient", "httpConnections", "signInFailuresPerHour", "lockoutThreshold", "lockoutSeconds",
            "signInsPerClientPerMinute", "deniedUnlocksPerMinute", "unlocksPerUserPerMinute", "lockMessagesPerMinute", "takenEmailsPerDay",
            "takenLockIDsPerDay", "wrongSetupCodesPerDay", "lockIDLapse", "trustedProxies", "oidcIssuers", "logLevel",
        ]
    }

    mutating func apply(file data: Data, name: String) throws {
        // Secrets (passwords, the master key) are not accepted in the settings file: files are copied around.
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ConfigurationError("\(name) is not a JSON object")
        }
        if let unknown = object.keys.sorted().first(where: { !FileSettings.keys.contains($0) }) {
            throw ConfigurationError("\(name): unknown setting \"\(unknown)\"")
        }
        let settings: FileSettings
        do {
            settings = try JSONDecoder().decode(FileSettings.self, from: data)
        } catch {
            throw ConfigurationError("\(name): \(error)")
        }
        databasePath = settings.databasePath ?? databasePath
        httpHost = settings.httpHost ?? httpHost
        httpPort = settings.httpPort ?? httpPort
        operationsHost = settings.operationsHost ?? operationsHost
        operationsPort = settings.operationsPort ?? operationsPort
        mqttURL = settings.mqttURL ?? mqttURL
        mqttCAFile = settings.mqttCAFile ?? mqttCAFile
        lockBrokerURL = settings.lockBrokerURL ?? lockBrokerURL
        mqttUsername = settings.mqttUsername ?? mqttUsername
        mqttPasswordFile = settings.mqttPasswordFile ?? mqttPasswordFile
        masterKeyFile = settings.masterKeyFile ?? masterKeyFile
        tokenLifetime = settings.tokenLifetime ?? tokenLifetime
        bcryptCost = settings.bcryptCost ?? bcryptCost
        bcryptConcurrency = settings.bcryptConcurrency ?? bcryptConcurrency
        bcryptQueue = settings.bcryptQueue ?? bcryptQueue
        unlockTimeout = settings.unlockTimeout ?? unlockTimeout
        httpIdleTimeout = settings.httpIdleTimeout ?? httpIdleTimeout
        httpRequestTimeout = settings.httpRequestTimeout ?? httpRequestTimeout
        httpConnectionsPerClient = settings.httpConnectionsPerClient ?? httpConnectionsPerClient
        httpConnections = settings.httpConnections ?? httpConnections
        signInFailuresPerHour = settings.signInFailuresPerHour ?? signInFailuresPerHour
        lockoutThreshold = settings.lockoutThreshold ?? lockoutThreshold
        lockoutSeconds = settings.lockoutSeconds ?? lockoutSeconds
        signInsPerClientPerMinute = settings.signInsPerClientPerMinute ?? signInsPerClientPerMinute
        deniedUnlocksPerMinute = settings.deniedUnlocksPerMinute ?? deniedUnlocksPerMinute
        unlocksPerUserPerMinute = settings.unlocksPerUserPerMinute ?? unlocksPerUserPerMinute
        lockMessagesPerMinute = settings.lockMessagesPerMinute ?? lockMessagesPerMinute
        takenEmailsPerDay = settings.takenEmailsPerDay ?? takenEmailsPerDay
        takenLockIDsPerDay = settings.takenLockIDsPerDay ?? takenLockIDsPerDay
        wrongSetupCodesPerDay = settings.wrongSetupCodesPerDay ?? wrongSetupCodesPerDay
        lockIDLapse = settings.lockIDLapse ?? lockIDLapse
        trustedProxies = settings.trustedProxies ?? trustedProxies
        oidcIssuers = settings.oidcIssuers ?? oidcIssuers
        logLevel = settings.logLevel ?? logLevel
    }

    mutating func apply(environment: [String: String]) throws {
        func int(_ name: String) throws -> Int? {
            guard let text = environment[name] else { return nil }
            guard let value = Int(text) else { throw ConfigurationError("\(name) must be a whole number") }
            return value
        }
        databasePath = environment["UNLOCKIT_DATABASE"] ?? databasePath
        httpHost = environment["UNLOCKIT_HTTP_HOST"] ?? httpHost
        httpPort = try int("UNLOCKIT_HTTP_PORT") ?? httpPort
        operationsHost = environment["UNLOCKIT_OPERATIONS_HOST"] ?? operationsHost
        operationsPort = try int("UNLOCKIT_OPERATIONS_PORT") ?? operationsPort
        mqttURL = environment["UNLOCKIT_MQTT_URL"] ?? mqttURL
        mqttCAFile = environment["UNLOCKIT_MQTT_CA_FILE"] ?? mqttCAFile
        lockBrokerURL = environment["UNLOCKIT_LOCK_BROKER_URL"] ?? lockBrokerURL
        mqttUsername = environment["UNLOCKIT_MQTT_USERNAME"] ?? mqttUsername
        mqttPassword = environment["UNLOCKIT_MQTT_PASSWORD"] ?? mqttPassword
        mqttPasswordFile = environment["UNLOCKIT_MQTT_PASSWORD_FILE"] ?? mqttPasswordFile
        masterKey = environment["UNLOCKIT_MASTER_KEY"] ?? masterKey
        masterKeyFile = environment["UNLOCKIT_MASTER_KEY_FILE"] ?? masterKeyFile
        tokenLifetime = try int("UNLOCKIT_TOKEN_LIFETIME") ?? tokenLifetime
        bcryptCost = try int("UNLOCKIT_BCRYPT_COST") ?? bcryptCost
        bcryptConcurrency = try int("UNLOCKIT_BCRYPT_CONCURRENCY") ?? bcryptConcurrency
        bcryptQueue = try int("UNLOCKIT_BCRYPT_QUEUE") ?? bcryptQueue
        if let text = environment["UNLOCKIT_UNLOCK_TIMEOUT"] {
            guard let value = Double(text) else { throw ConfigurationError("UNLOCKIT_UNLOCK_TIMEOUT must be a number of seconds") }
            unlockTimeout = value
        }
        signInsPerClientPerMinute = try int("UNLOCKIT_SIGN_INS_PER_CLIENT_PER_MINUTE") ?? signInsPerClientPerMinute
        deniedUnlocksPerMinute = try int("UNLOCKIT_DENIED_UNLOCKS_PER_MINUTE") ?? deniedUnlocksPerMinute
        unlocksPerUserPerMinute = try int("UNLOCKIT_UNLOCKS_PER_USER_PER_MINUTE") ?? unlocksPerUserPerMinute
        lockMessagesPerMinute = try int("UNLOCKIT_LOCK_MESSAGES_PER_MINUTE") ?? lockMessagesPerMinute
        takenEmailsPerDay = try int("UNLOCKIT_TAKEN_EMAILS_PER_DAY") ?? takenEmailsPerDay
        takenLockIDsPerDay = try int("UNLOCKIT_TAKEN_LOCK_IDS_PER_DAY") ?? takenLockIDsPerDay
        wrongSetupCodesPerDay = try int("UNLOCKIT_WRONG_SETUP_CODES_PER_DAY") ?? wrongSetupCodesPerDay
        lockIDLapse = try int("UNLOCKIT_LOCK_ID_LAPSE") ?? lockIDLapse
        httpIdleTimeout = try int("UNLOCKIT_HTTP_IDLE_TIMEOUT") ?? httpIdleTimeout
        httpRequestTimeout = try int("UNLOCKIT_HTTP_REQUEST_TIMEOUT") ?? httpRequestTimeout
        httpConnectionsPerClient = try int("UNLOCKIT_HTTP_CONNECTIONS_PER_CLIENT") ?? httpConnectionsPerClient
        httpConnections = try int("UNLOCKIT_HTTP_CONNECTIONS") ?? httpConnections
        if let text = environment["UNLOCKIT_TRUSTED_PROXIES"] {
            trustedProxies = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        logLevel = environment["UNLOCKIT_LOG_LEVEL"] ?? logLevel
        if let text = environment["UNLOCKIT_OIDC_ISSUERS"] {
            do {
                oidcIssuers = try JSONDecoder().decode([OIDCIssuer].self, from: Data(text.utf8))
            } catch let error as ConfigurationError {
                throw ConfigurationError("UNLOCKIT_OIDC_ISSUERS: \(error)")
            } catch {
                throw ConfigurationError("UNLOCKIT_OIDC_ISSUERS must be a JSON array of issuers: \(error)")
            }
        }
    }

    /// The broker's address, or why `mqttURL` is not one. A URL that carries credentials is not
    /// repeated: its password would reach the log.
    func brokerAddress() throws -> BrokerAddress { try Self.brokerAddress(mqttURL) }

    /// How the server's clients reach the broker over TLS (`mqtts://`), or `nil` for plain TCP.
    func brokerTLS() throws -> MQTTTLS? { try brokerAddress().tls(caFile: mqttCAFile) }

    /// What a lock is told to connect to: ``lockBrokerURL``, or ``mqttURL`` without one.
    var lockBrokerAddress: String { lockBrokerURL ?? mqttURL }

    /// What the server says as it starts about a broker reached without TLS across a network, by
    /// itself or by the locks: passwords would cross it in the clear.
    public var plainNetworkWarnings: [String] {
        var warnings: [String] = []
        if let address = BrokerAddress(mqttURL), address.isPlainOnTheNetwork {
            warnings.append(
                "the server reaches the broker at \(mqttURL) without TLS: its broker password and every command cross the network in the clear; "
                    + "use the broker's loopback listener, or mqtts://")
        }
        if let address = BrokerAddress(lockBrokerAddress), address.isPlainOnTheNetwork {
            warnings.append(
                "locks are told to reach the broker at \(lockBrokerAddress) without TLS: their broker passwords and messages cross the network "
                    + "in the clear; set lockBrokerURL to the broker's TLS listener (mqtts://)")
        }
        return warnings
    }

    private static func brokerAddress(_ url: String) throws -> BrokerAddress {
        if let address = BrokerAddress(url) { return address }
        if url.contains("@") {
            throw ConfigurationError(
                "the broker address must not carry a user name or password (mqtt://…@host): name the account with "
                    + "UNLOCKIT_MQTT_USERNAME and give its password with UNLOCKIT_MQTT_PASSWORD_FILE")
        }
        throw ConfigurationError("\(url) is not a broker address like mqtt://127.0.0.1:1883 or mqtts://broker.example.com:8883")
    }

    func validate() throws {
        guard (0...65535).contains(httpPort) else { throw ConfigurationError("the HTTP port must be 0–65535") }
        guard (0...65535).contains(operationsPort) else { throw ConfigurationError("the operations port must be 0–65535") }
        // Said before the second bind fails with a bare "address in use". `::` takes the port on every
        // interface, IPv4 ones too; `0.0.0.0` on every IPv4 one.
        func clash(_ one: String, _ other: String) -> Bool {
            one == other || ["::", "[::]"].contains(one) || (one == "0.0.0.0" && !other.contains(":"))
        }
        if operationsPort != 0, operationsPort == httpPort, clash(httpHost, operationsHost) || clash(operationsHost, httpHost) {
            throw ConfigurationError(
                "the operations port must differ from the HTTP port (both \(httpPort), on \(httpHost) and \(operationsHost))")
        }
        _ = try brokerAddress()
        if let lockBrokerURL { _ = try Self.brokerAddress(lockBrokerURL) }
        if let mqttCAFile {
            guard try brokerAddress().usesTLS else { throw ConfigurationError("a CA file for the broker is given, but \(mqttURL) is not mqtts://") }
            guard FileManager.default.isReadableFile(atPath: mqttCAFile) else {
                throw ConfigurationError("cannot read the broker's CA file \(mqttCAFile)")
            }
        }
        guard (12...31).contains(bcryptCost) else { throw ConfigurationError("the bcrypt cost must be 12–31") }
        guard (1...64).contains(bcryptConcurrency) else { throw ConfigurationError("the bcrypt concurrency must be 1–64") }
        guard (0...10_000).contains(bcryptQueue) else { throw ConfigurationError("the bcrypt queue must be 0–10000") }
        guard (60...30 * 86400).contains(tokenLifetime) else { throw ConfigurationError("the token lifetime must be 60 s to 30 days") }
        // A lock forgets its challenge 5 s after issuing it (protocol.md): a longer wait would end a slow
        // unlock as the lock's `expired` denial instead of `lock_timeout`, and past it nothing can open.
        guard (0.5...5).contains(unlockTimeout) else { throw ConfigurationError("the unlock timeout must be 0.5–5 s") }
        guard (1...3600).contains(httpIdleTimeout) else { throw ConfigurationError("the HTTP idle timeout must be 1–3600 s") }
        guard (1...3600).contains(httpRequestTimeout) else { throw ConfigurationError("the HTTP request timeout must be 1–3600 s") }
        guard (1...100_000).contains(httpConnectionsPerClient) else {
            throw ConfigurationError("HTTP connections per client must be 1–100000")
        }
        // Both listeners' connections and the store's and broker's descriptors must fit in the
        // 65,536 the server raises its limit to.
        guard (1...30_000).contains(httpConnections) else { throw ConfigurationError("HTTP connections must be 1–30000") }
        guard signInFailuresPerHour >= 1, lockoutThreshold >= 1, lockoutSeconds >= 1 else {
            throw ConfigurationError("sign-in limits must be positive")
        }
        guard (1...1_000_000).contains(signInsPerClientPerMinute) else {
            throw ConfigurationError("sign-ins per client per minute must be 1–1000000")
        }
        guard (1...1_000_000).contains(deniedUnlocksPerMinute) else {
            throw ConfigurationError("denied unlocks per minute must be 1–1000000")
        }
        guard (1...1_000_000).contains(unlocksPerUserPerMinute) else {
            throw ConfigurationError("unlocks per user per minute must be 1–1000000")
        }
        guard (1...10_000_000).contains(lockMessagesPerMinute) else {
            throw ConfigurationError("lock messages per minute must be 1–10000000")
        }
        guard (1...1_000_000).contains(takenEmailsPerDay) else {
            throw ConfigurationError("taken emails per day must be 1–1000000")
        }
        guard (1...1_000_000).contains(takenLockIDsPerDay) else {
            throw ConfigurationError("taken lock ids per day must be 1–1000000")
        }
        guard (1...1_000_000).contains(wrongSetupCodesPerDay) else {
            throw ConfigurationError("wrong setup codes per day must be 1–1000000")
        }
        guard (1...365 * 86400).contains(lockIDLapse) else {
            throw ConfigurationError("the lock id lapse must be 1 s to 365 days")
        }
        if let bad = trustedProxies.first(where: { ClientAddress.canonical($0) == nil }) {
            throw ConfigurationError("trusted proxy \"\(bad)\" is not an IP address")
        }
        guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(logLevel) else {
            throw ConfigurationError("unknown log level \(logLevel)")
        }
        // The verifier keeps one entry per `iss`: a second would silently replace the first.
        if let twice = Dictionary(grouping: oidcIssuers, by: \.issuer).filter({ $0.value.count > 1 }).keys.sorted().first {
            throw ConfigurationError("OIDC issuer \(twice) is configured twice: give it one entry, with all its client ids and companies")
        }
        for issuer in oidcIssuers {
            guard !issuer.clientIDs.isEmpty, (issuer.jwksFile == nil) != (issuer.jwksURL == nil) else {
                throw ConfigurationError("OIDC issuer \(issuer.issuer) needs client ids and exactly one of jwksFile or jwksURL")
            }
            // Keys fetched in the clear could be anyone's, and with them anyone could sign anyone in.
            if let url = issuer.jwksURL, URL(string: url)?.scheme?.lowercased() != "https" {
                throw ConfigurationError("OIDC issuer \(issuer.issuer): jwksURL must be an https:// address")
            }
            if let algorithms = issuer.algorithms {
                let supported = Self.oidcAlgorithms
                guard !algorithms.isEmpty, algorithms.allSatisfy(supported.contains) else {
                    throw ConfigurationError(
                        "OIDC issuer \(issuer.issuer): algorithms must be one or more of \(supported.joined(separator: ", "))")
                }
            }
            guard let companies = issuer.companies else {
                throw ConfigurationError(
                    "OIDC issuer \(issuer.issuer) needs companies: the ids of the companies whose users it signs in "
                        + "(bootstrap prints them), or [\"*\"] for every company's")
            }
            guard companies == [OIDCIssuer.everyCompany] || (!companies.isEmpty && companies.allSatisfy({ CompanyID($0) != nil })) else {
                throw ConfigurationError("OIDC issuer \(issuer.issuer): companies must be one or more company ids, or [\"*\"] alone")
            }
        }
    }

    /// The asymmetric algorithms an ID token may be signed with (never `none` or HMAC).
    public static let oidcAlgorithms = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]

    /// The broker password from the environment or its file.
    public func resolvedMQTTPassword() throws -> String {
        if let mqttPassword { return mqttPassword }
        guard let file = mqttPasswordFile else { throw ConfigurationError("set UNLOCKIT_MQTT_PASSWORD or UNLOCKIT_MQTT_PASSWORD_FILE") }
        // The broker's admin account: whoever reads this file can remove every lock's account.
        do {
            return try PrivateFile.read(file).trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            switch error {
            case .unreadable: throw ConfigurationError("cannot read \(file)")
            case .exposed(let mode):
                throw ConfigurationError(
                    "the broker password file \(file) is readable by others (mode \(String(mode, radix: 8))); run: chmod 600 \(file)")
            }
        }
    }

    public var resolvedMasterKeyFile: String {
        masterKeyFile
            ?? ((databasePath as NSString).deletingLastPathComponent.isEmpty
                ? "master.key" : (databasePath as NSString).deletingLastPathComponent + "/master.key")
    }
}
