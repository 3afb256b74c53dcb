import Logging
import NIOPosix
import ServiceLifecycle
import UnlockITCore

/// Runs the store's upkeep (``Store/maintain()``) four times a second on NIO's thread pool, a
/// service of the server's service group.
struct StoreMaintenance: Service {
    let store: any Store
    let logger: Logger
    var interval: Duration = .milliseconds(250)

    func run() async throws {
        let store = self.store
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled else { return }
                do {
                    try await NIOThreadPool.singleton.runIfActive { try store.maintain() }
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning("store upkeep failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
