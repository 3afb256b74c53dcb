import Foundation
import Logging
import ServiceLifecycle
import UnlockITCore

/// Shuts off the broker account of a lock that sends more messages unasked than its budget
/// (``ServerConfiguration/lockMessagesPerMinute``; ``LockGateway/floods``).
///
/// Every lock's messages reach the server through its one broker connection, and the broker queues
/// them for it in one queue: an account that publishes as fast as it can (a lock's leaked password,
/// or a lock an admin registered without a device, whose password the admin holds) delays every
/// other company's unlocks and fills the broker's memory. The gateway ignores what is over the
/// budget, but only the broker can stop it being sent. So the account is given a new random password
/// that nobody is told, which disconnects whoever is connected with it: the same step as an admin's
/// new broker password, taken in the lock's turn, audited in its company's log with no actor and
/// reason ``AuditReason/messageFlood``. The lock stays offline until an admin asks for a new broker
/// password (`unlockit locks broker-password`) and gives it to the device.
///
/// A report whose account is no longer the lock's when the turn comes (an admin's new password, a
/// registration or a retirement meanwhile) is let go. A shut-off the broker did not make is tried
/// again, a few times, rather than at the next report a minute on.
struct LockFloodGuard: Service {
    let services: AppServices
    /// How long to wait before trying a failed shut-off again, times the attempt's number.
    var retryDelay: Duration = .seconds(2)
    var attempts = 4

    func run() async throws {
        await withDiscardingTaskGroup { group in
            // Each report on its own: one lock's turn, or the broker's slow answer, holds up no other.
            for await report in services.gateway.floods.cancelOnGracefulShutdown() {
                group.addTask { await shutOff(report) }
            }
            group.cancelAll()
        }
    }

    enum Outcome: Equatable {
        case shutOff, stale, failed
    }

    /// Shuts the reported account off, trying again after a failure; the last attempt's outcome.
    @discardableResult
    func shutOff(_ report: LockGateway.FloodReport) async -> Outcome {
        var outcome = Outcome.failed
        for attempt in 1...max(1, attempts) {
            outcome = await attemptShutOff(report)
            guard outcome == .failed, attempt < attempts else { break }
            do { try await Task.sleep(for: retryDelay * attempt) } catch { break }
        }
        return outcome
    }

    private func attemptShutOff(_ report: LockGateway.FloodReport) async -> Outcome {
        let id = report.lock
        let turns = services.lockAccountTurns
        guard await turns.acquire(id, deadline: .now + AppServices.lockTurnWait) else {
            services.logger.error(
                "a lock's broker account sent more than its budget, and its turn to be shut off never came", metadata: ["lock": "\(id)"])
            return .failed
        }
        defer { turns.release(id) }
        // The server is stopping (a turn does not wait on cancellation): leave the account as it is.
        guard !Task.isCancelled else { return .failed }
        guard services.gateway.accountGeneration(id) == report.generation else { return .stale }
        do {
            guard let lock = try await services.store.lockOfAnyCompany(id), lock.state != .retired else {
                // Only a lock's account may publish on its topics, and a retired lock has none.
                services.logger.error(
                    "an account that is not a registered lock's sent more than a lock's budget on its topics", metadata: ["lock": "\(id)"])
                return .stale
            }
            try await services.accounts.resetLockPassword(id, password: BrokerAccounts.randomPassword())
            services.gateway.brokerDisconnected(id)
            services.store.enqueue(
                services.audit(.resetLockPassword, by: nil, company: lock.companyID, reason: .messageFlood, lock: id, room: lock.roomID))
            services.logger.warning(
                "a lock's broker account sent more messages than its budget; it has a new password nobody holds until an admin asks for one",
                metadata: ["lock": "\(id)", "company": "\(lock.companyID)"])
            return .shutOff
        } catch {
            services.logger.error("could not shut off a flooding lock's broker account", metadata: ["lock": "\(id)", "error": "\(error)"])
            return .failed
        }
    }
}
