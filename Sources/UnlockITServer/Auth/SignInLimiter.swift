import Foundation
import Synchronization

/// Failed password checks per account (sign-ins and the current password of a password change):
/// at most `perHour` in any hour, and a short lock-out after `lockoutThreshold` failures in a row.
/// Accounts are keyed by the normalised email whether or not they exist, and a blocked attempt is
/// answered exactly like a wrong password, so neither the limit nor the lock-out tells an attacker
/// anything.
///
/// A client (``ClientAddress``) that signed in to the account with its password in the last
/// ``knownClientLifetime`` is counted apart: its checks have limits of their own, the same ones, and
/// neither touch nor are stopped by the account's. So whoever knows an email can no longer keep its
/// user out by failing on purpose from elsewhere, and guessing from a client that never had the
/// password is limited as before; a client becomes known only by giving the right password.
final class SignInLimiter: Sendable {
    private struct Record {
        var failures: [Date] = []
        var consecutive = 0
        var lockedUntil: Date?
        /// Checks started and not yet finished.
        var inFlight = 0
    }

    /// A password check that may run; end it with ``finished(_:passed:now:)`` or ``abandoned(_:)``.
    struct Attempt: Sendable {
        /// The record it counts on: the account's, or its known client's.
        let account: String
        let email: String
        let client: String?
    }

    enum Verdict: Sendable {
        /// Check the password.
        case check(Attempt)
        /// Locked out or over the hourly limit: answer exactly like a wrong password.
        case refused
        /// As many checks are already running for the account as it has failures left before a
        /// lock-out (or the hour's limit): answer 503 `server_busy`. Without this, checks running at
        /// the same time would together get past the limit (bcrypt's slot and queue hold nine, the
        /// lock-out threshold is five); it tells nothing about the password.
        case busy
    }

    private let perHour: Int
    private let lockoutThreshold: Int
    private let lockout: TimeInterval
    private let records = Mutex<[String: Record]>([:])
    /// Per account, the clients that signed in to it with its password, and when they last did.
    private let knownClients = Mutex<[String: [String: Date]]>([:])

    /// How long a client that signed in stays known to the account.
    static let knownClientLifetime: TimeInterval = 30 * 86_400
    /// Known clients kept per account (the most recent).
    static let knownClientsPerAccount = 8

    /// How many accounts are remembered.
    var accountCount: Int { records.withLock { $0.count } }
    /// How many accounts have known clients remembered.
    var accountsWithKnownClients: Int { knownClients.withLock { $0.count } }
    /// Bounds memory under a spray of random emails: the accounts failed longest ago are forgotten
    /// first, a tenth at a time (never one with a check running). The accounts with known clients are
    /// bounded by it too: those whose clients are all past ``knownClientLifetime`` go first, then
    /// those that signed in longest ago.
    private let capacity: Int

    init(perHour: Int, lockoutThreshold: Int, lockoutSeconds: Int, capacity: Int = 100_000) {
        self.capacity = capacity
        self.perHour = perHour
        self.lockoutThreshold = lockoutThreshold
        self.lockout = TimeInterval(lockoutSeconds)
    }

    /// Whether a password check of the account `email` may start now, asked from `client` (none:
    /// counted on the account).
    func begin(_ email: String, client: String? = nil, now: Date) -> Verdict {
        // A client known to the account counts on a record of its own, keyed by both.
        let lastSignIn = client.flatMap { client in knownClients.withLock { $0[email]?[client] } }
        let known = lastSignIn.map { now.timeIntervalSince($0) < Self.knownClientLifetime } ?? false
        let account = if known, let client { "\(email)\u{0}\(client)" } else { email }
        return records.withLock { records in
            if records[account] == nil && records.count >= capacity {
                // A tenth at once: locked-out accounts last, the others by their last failure, oldest first.
                func order(_ record: Record) -> (Int, Date) {
                    ((record.lockedUntil ?? .distantPast) > now ? 1 : 0, record.failures.last ?? .distantPast)
                }
                records.makeRoom(capacity: capacity, keeping: { $0.inFlight > 0 }, rank: order, goesFirst: <)
            }
            var record = records[account] ?? Record()
            defer { records[account] = record }
            record.failures.removeAll { now.timeIntervalSince($0) >= 3600 }
            if let until = record.lockedUntil, now < until { return .refused }
            guard record.failures.count < perHour else { return .refused }
            guard record.consecutive + record.inFlight < lockoutThreshold, record.failures.count + record.inFlight < perHour else {
                return .busy
            }
            record.inFlight += 1
            return .check(Attempt(account: account, email: email, client: client))
        }
    }

    /// Runs `check`, the password check of `attempt`, and counts its verdict; a check that throws
    /// (the hasher turned it away) counts for nothing.
    func verdict(of attempt: Attempt, at now: () -> Date, _ check: () async throws -> Bool) async throws -> Bool {
        let passed: Bool
        do {
            passed = try await check()
        } catch {
            abandoned(attempt)
            throw error
        }
        finished(attempt, passed: passed, now: now())
        return passed
    }

    /// The check ended with a verdict on the password.
    func finished(_ attempt: Attempt, passed: Bool, now: Date) {
        records.withLock { records in
            guard var record = records[attempt.account] else { return }
            record.inFlight = max(0, record.inFlight - 1)
            if passed {
                record.consecutive = 0
                if let client = attempt.client { remember(client, of: attempt.email, now: now) }
            } else {
                record.failures.append(now)
                record.consecutive += 1
                if record.consecutive >= lockoutThreshold {
                    record.lockedUntil = now.addingTimeInterval(lockout)
                    record.consecutive = 0
                }
            }
            records[attempt.account] = record
        }
    }

    private func remember(_ client: String, of email: String, now: Date) {
        knownClients.withLock { known in
            if known[email] == nil && known.count >= capacity { forgetKnownClients(&known, now: now) }
            var clients = (known[email] ?? [:]).filter { now.timeIntervalSince($0.value) < Self.knownClientLifetime }
            clients[client] = now
            if clients.count > Self.knownClientsPerAccount, let oldest = clients.min(by: { $0.value < $1.value })?.key { clients[oldest] = nil }
            known[email] = clients
        }
    }

    /// Makes room (``Swift/Dictionary/makeRoom(capacity:dropping:keeping:rank:goesFirst:)``): the accounts
    /// whose clients are no longer known go first, then those that signed in longest ago.
    private func forgetKnownClients(_ known: inout [String: [String: Date]], now: Date) {
        func lastSignIn(_ clients: [String: Date]) -> Date { clients.values.max() ?? .distantPast }
        known.makeRoom(
            capacity: capacity, dropping: { now.timeIntervalSince(lastSignIn($0)) >= Self.knownClientLifetime }, rank: lastSignIn, goesFirst: <)
    }

    /// The check did not run to a verdict (the hasher turned it away, or it failed): it counts for nothing.
    func abandoned(_ attempt: Attempt) {
        records.withLock { records in
            guard var record = records[attempt.account] else { return }
            record.inFlight = max(0, record.inFlight - 1)
            records[attempt.account] = record
        }
    }
}
