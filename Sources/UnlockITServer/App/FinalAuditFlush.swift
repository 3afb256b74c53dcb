import Logging

/// Writes the audit queue when the server stops. Unlock events are queued, not awaited, so the
/// doors already answered are recorded only by this; a disk that fails for a moment (full, an I/O
/// error) must not lose them, so a failed write is tried again for about 15 s before giving up.
public enum FinalAuditFlush {
    public static func run(
        attempts: Int = 8, firstDelay: Duration = .milliseconds(250), logger: Logger, flush: () async throws -> Void
    ) async {
        var delay = firstDelay
        for attempt in 1...max(1, attempts) {
            do {
                try await flush()
                return
            } catch {
                logger.error(
                    "could not write the last audit events", metadata: ["error": "\(error)", "attempt": "\(attempt) of \(attempts)"])
                guard attempt < attempts else { return }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(4))
            }
        }
    }
}
