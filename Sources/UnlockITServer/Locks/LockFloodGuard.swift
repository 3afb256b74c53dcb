import Foundation
import Logging
import ServiceLifecycle
import UnlockITCore

/// Shuts off the broker account of a lock that sends more messages than its budget
/// (``ServerConfiguration/lockMessagesPerMinute``; ``LockGateway/floods``).
///
/// Every lock's messages reach the server through its one broker connection, and the broker queues
/// them for it in one queue: an account that publishes as fast as it can (a lock's leaked password,
/// or a lock an admin registered without a device, whose password the admin holds) delays every
/// other company's unlocks and fills the broker's memory. The gateway drops what is over the budget
/// unread, but only the broker can stop it being sent. So the account is given a new random password
/// that nobody is told, which disconnects whoever is connected with it: the same step as an admin's
/// new broker password, taken in the lock's turn, audited in its company's log with no actor and
/// reason ``AuditReason/messageFlood``. The lock stays offline until an admin asks for a new broker
/// password (`unlockit locks broker-password`) and gives it to the device.
struct LockFloodGuard: Service {
    let services: AppServices

    func run() async throws {
        for await lock in services.gateway.floods.cancelOnGracefulShutdown() {
            await shutOff(lock)
        }
    }

    /// Gives the lock's account a password nobody holds; logs why not where it cannot.
    func shutOff(_ id: LockID) async {
        let turns = services.lockAccountTurns
        guard await turns.acquire(id, deadline: .now + AppServices.lockTurnWait) else {
            services.logger.error(
                "a lock's broker account sent more than its budget and could not be shut off: its turn never came", metadata: ["lock": "\(id)"])
            return
        }
        defer { turns.release(id) }
        do {
            guard let lock = try await services.store.lockOfAnyCompany(id), lock.state != .retired else {
                // Only a lock's account may publish on its topics, and a retired lock has none.
                services.logger.error(
                    "an account that is not a registered lock's sent more than a lock's budget on its topics", metadata: ["lock": "\(id)"])
                return
            }
            try await services.accounts.resetLockPassword(id, password: BrokerAccounts.randomPassword())
            services.gateway.brokerDisconnected(id)
            services.store.enqueue(
                services.audit(.resetLockPassword, by: nil, company: lock.companyID, reason: .messageFlood, lock: id, room: lock.roomID))
            services.logger.warning(
                "a lock's broker account sent more messages than its budget; it has a new password nobody holds until an admin asks for one",
                metadata: ["lock": "\(id)", "company": "\(lock.companyID)"])
        } catch {
            // Asked again at the lock's next message over the budget a minute on (``RateLimiter``).
            services.logger.error("could not shut off a flooding lock's broker account", metadata: ["lock": "\(id)", "error": "\(error)"])
        }
    }
}
