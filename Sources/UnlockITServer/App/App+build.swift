import Foundation
import Hummingbird
import Logging
import MQTT
import NIOCore
import ServiceLifecycle
import UnixSignals
import UnlockITCore

/// Assembles the server from its parts: the store, the broker link with its lock gateway, sign-in,
/// and the HTTP routes. `serve` runs the result; tests run it with HummingbirdTesting.
public enum UnlockITApp {
    /// The pieces a running server is made of.
    public struct Parts: Sendable {
        public let configuration: ServerConfiguration
        public let store: any Store
        public let masterKey: MasterKey
        public let clock: ServerClock
        public let metrics: ServerMetrics
        public let shutdown: ShutdownState
        public let logger: Logger

        public init(
            configuration: ServerConfiguration, store: any Store, masterKey: MasterKey, clock: ServerClock = .system,
            metrics: ServerMetrics = ServerMetrics(), shutdown: ShutdownState = ShutdownState(),
            logger: Logger
        ) {
            self.configuration = configuration
            self.store = store
            self.masterKey = masterKey
            self.clock = clock
            self.metrics = metrics
            self.shutdown = shutdown
            self.logger = logger
        }
    }

    /// The server's two HTTP listeners: the API, and the operations listener with `/healthz` and
    /// `/metrics` (``ServerConfiguration/operationsHost``).
    public enum Listener: String, Sendable {
        case api, operations
    }

    /// Builds the application. Its service group runs the API's HTTP server, the operations
    /// listener and the MQTT link together, and shuts them all down cleanly when asked to; ``run(_:_:)``
    /// with the same `parts` asks on SIGINT or SIGTERM. `onListening` is told each listener's port
    /// once it is bound.
    public static func build(
        _ parts: Parts, onListening: @escaping @Sendable (Listener, Int) async -> Void = { _, _ in }
    ) throws -> some ApplicationProtocol {
        let configuration = parts.configuration
        let address = try configuration.brokerAddress()
        let link = try BrokerLink(
            address: address, tls: try configuration.brokerTLS(), username: configuration.mqttUsername,
            password: try configuration.resolvedMQTTPassword(), store: parts.store,
            unlockTimeout: .milliseconds(Int64(configuration.unlockTimeout * 1000)), metrics: parts.metrics, logger: parts.logger,
            clock: parts.clock, lockMessagesPerMinute: configuration.lockMessagesPerMinute)
        let services = AppServices(
            store: parts.store, clock: parts.clock,
            hasher: PasswordHasher(
                cost: configuration.bcryptCost, concurrency: configuration.bcryptConcurrency, maxWaiting: configuration.bcryptQueue),
            signInLimiter: SignInLimiter(
                perHour: configuration.signInFailuresPerHour, lockoutThreshold: configuration.lockoutThreshold,
                lockoutSeconds: configuration.lockoutSeconds),
            clientLimiter: RateLimiter(perMinute: configuration.signInsPerClientPerMinute),
            unlockLimiter: RateLimiter(perMinute: configuration.unlocksPerUserPerMinute),
            deniedUnlockLimiter: DeniedUnlockLimiter(perMinute: configuration.deniedUnlocksPerMinute),
            takenEmailLimiter: CompanyDailyBudget(perDay: configuration.takenEmailsPerDay),
            takenLockIDLimiter: CompanyDailyBudget(perDay: configuration.takenLockIDsPerDay),
            wrongSetupCodeLimiter: CompanyDailyBudget(perDay: configuration.wrongSetupCodesPerDay),
            lockIDLapse: configuration.lockIDLapse,
            trustedProxies: Set(configuration.trustedProxies.compactMap(ClientAddress.canonical)),
            oidc: OIDCVerifier(issuers: configuration.oidcIssuers, clock: parts.clock, logger: parts.logger),
            tokenLifetime: configuration.tokenLifetime, gateway: link.gateway, accounts: link.accounts,
            sealer: KeySealer(masterKey: parts.masterKey), metrics: parts.metrics, logger: parts.logger, brokerURL: configuration.lockBrokerAddress)
        // Each listener counts its own connections, per client and in all: a scraper's never take a
        // place of the API's.
        func limits(_ listener: Listener) -> HTTPConnectionLimits {
            HTTPConnectionLimits(
                perClient: configuration.httpConnectionsPerClient, total: configuration.httpConnections,
                requestTimeout: .seconds(Int64(configuration.httpRequestTimeout)),
                trustedProxies: listener == .api ? services.trustedProxies : [])
        }
        let idleTimeout = TimeAmount.seconds(Int64(configuration.httpIdleTimeout))
        let operationsLimits = limits(.operations)
        let operations = Application(
            router: buildOperationsRouter(services: services, brokerReady: { link.isReady }, shutdown: parts.shutdown),
            server: .http1(configuration: .init(additionalChannelHandlers: [operationsLimits.handler()], idleTimeout: idleTimeout)),
            configuration: .init(address: .hostname(configuration.operationsHost, port: configuration.operationsPort), serverName: "unlockit"),
            onServerRunning: { channel in await onListening(.operations, channel.localAddress?.port ?? configuration.operationsPort) },
            logger: parts.logger)
        let apiLimits = limits(.api)
        return Application(
            router: buildRouter(services: services),
            server: .http1(configuration: .init(additionalChannelHandlers: [apiLimits.handler()], idleTimeout: idleTimeout)),
            configuration: .init(address: .hostname(configuration.httpHost, port: configuration.httpPort), serverName: "unlockit"),
            services: [
                link, LockFloodGuard(services: services), StoreMaintenance(store: parts.store, clock: parts.clock, logger: parts.logger),
                operations,
            ],
            onServerRunning: { channel in await onListening(.api, channel.localAddress?.port ?? configuration.httpPort) },
            logger: parts.logger)
    }

    /// Runs `app`, built by ``build(_:onListening:)`` from the same `parts`, until SIGINT or SIGTERM,
    /// then shuts it down cleanly. `/healthz` answers 503 from the moment the signal comes
    /// (`parts.shutdown`), before the API's listener closes.
    public static func run(_ app: some ApplicationProtocol, _ parts: Parts) async throws {
        let noticed = NoticingShutdown(app: app, shutdown: parts.shutdown)
        let group = ServiceGroup(
            configuration: .init(services: [noticed], gracefulShutdownSignals: [.sigterm, .sigint], logger: parts.logger))
        try await group.run()
    }

    /// The operations listener's routes: `/healthz` and `/metrics`, nothing of the API's.
    static func buildOperationsRouter(
        services: AppServices, brokerReady: @escaping @Sendable () -> Bool, shutdown: ShutdownState = ShutdownState()
    ) -> Router<AppContext> {
        let router = baseRouter(services: services, listener: .operations)
        OperationsController(services: services, brokerReady: brokerReady, shutdown: shutdown).addRoutes(to: router)
        return finished(router)
    }

    /// The API's routes, under `/api/v1`.
    static func buildRouter(services: AppServices) -> Router<AppContext> {
        let router = baseRouter(services: services, listener: .api)
        OpenAPIDocumentController().addRoutes(to: router)

        let api = router.group("api/v1").add(
            middleware: QueryParametersMiddleware(readers: ["GET /api/v1/locks", "GET /api/v1/audit", "POST /api/v1/users/import"]))
        let auth = AuthController(services: services)
        let me = MeController(services: services)
        auth.addRoutes(to: api)

        // Reachable with an admin-given password that has not been changed yet.
        let pending = api.group().add(middleware: AuthMiddleware(store: services.store, clock: services.clock, allowsPendingPasswordChange: true))
        auth.addSignedInRoutes(to: pending)
        me.addPasswordRoutes(to: pending)

        let authentication = AuthMiddleware(store: services.store, clock: services.clock)
        let signedIn = api.group().add(middleware: authentication)
        me.addRoutes(to: signedIn)
        UnlockController(services: services).addRoutes(to: signedIn)

        let admin = signedIn.group().add(middleware: RequireAdmin(authentication: authentication))
        let users = UsersController(services: services)
        users.addRoutes(to: admin)
        // The company's turn is taken before RequireAdmin reads the body.
        let imports = signedIn.group().add(middleware: OneImportPerCompany()).add(middleware: RequireAdmin(authentication: authentication))
        users.addImportRoute(to: imports)
        RoomsController(services: services).addRoutes(to: admin)
        LocksController(services: services).addRoutes(to: admin)
        AuditController(services: services).addRoutes(to: admin)
        return finished(router)
    }

    /// A router with what every listener's answers have: HEAD wherever GET is (RFC 9110 §9.3.2; a load
    /// balancer's health check may use it), the security headers outermost so that problem answers
    /// have them too, and problem+json for every error.
    private static func baseRouter(services: AppServices, listener: Listener) -> Router<AppContext> {
        let router = Router(context: AppContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: SecurityHeadersMiddleware())
        router.add(middleware: ProblemMiddleware(metrics: services.metrics, listener: listener))
        return router
    }

    /// `router` with 405 and `Allow` for a path it has, asked with a method it does not answer. Added
    /// last: it must wrap no route, only the not-found answer (see the middleware).
    private static func finished(_ router: Router<AppContext>) -> Router<AppContext> {
        router.add(middleware: MethodNotAllowedMiddleware(allowed: AllowedMethods(router.routes)))
        return router
    }
}
