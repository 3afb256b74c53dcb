import Synchronization

/// Whether the server has begun to shut down. From then on `/healthz` answers 503 `shutting_down`,
/// while the API still finishes the requests it has: the API's listener is closed first and the
/// operations listener last, so without this a load balancer would go on hearing "ok" from a server
/// that no longer takes connections.
public final class ShutdownState: Sendable {
    private let begun = Atomic<Bool>(false)

    public init() {}

    public var hasBegun: Bool { begun.load(ordering: .relaxed) }

    func begin() { begun.store(true, ordering: .relaxed) }
}
