import ServiceLifecycle

/// Runs a service and marks ``ShutdownState`` the moment its graceful shutdown is asked for, before
/// the service's own parts start to stop.
struct NoticingShutdown<Wrapped: Service>: Service {
    let app: Wrapped
    let shutdown: ShutdownState

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await app.run()
        } onGracefulShutdown: { [shutdown] in
            shutdown.begin()
        }
    }
}
