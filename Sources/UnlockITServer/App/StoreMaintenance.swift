import Logging
import NIOPosix
import ServiceLifecycle
import UnlockITCore

/// Runs the store's upkeep (``Store/maintain()``) four times a second on NIO's thread pool, and
/// deletes expired sessions and spent ID tokens every ten minutes (the tables would otherwise grow
/// with every sign-in);
/// a service of the server's service group.
struct StoreMaintenance: Service {
    let store: any Store
    let clock: ServerClock
    let logger: Logger
    var interval: Duration = .milliseconds(250)
    var purgeEvery = 2400

    func run() async throws {
        let store = self.store
        await cancelWhenGracefulShutdown {
            var turn = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled else { return }
                if turn % purgeEvery == 0 { await purgeSessions() }
                turn += 1
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

    func purgeSessions() async {
        do {
            let purged = try await store.purgeSessions(expiredBefore: clock.now())
            if purged > 0 { logger.info("expired sessions deleted", metadata: ["count": "\(purged)"]) }
        } catch {
            logger.warning("deleting expired sessions failed", metadata: ["error": "\(error)"])
        }
        do {
            _ = try await store.purgeSpentIDTokens(keptUntilBefore: clock.now())
        } catch {
            logger.warning("forgetting expired ID tokens failed", metadata: ["error": "\(error)"])
        }
    }
}
