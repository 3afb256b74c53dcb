import Foundation
import Synchronization

/// Failed sign-ins per account: at most `perHour` in any hour, and a short lock-out after
/// `lockoutThreshold` failures in a row. Accounts are keyed by the normalised email whether or not
/// they exist, and a blocked attempt is answered exactly like a wrong password, so neither the limit
/// nor the lock-out tells an attacker anything.
final class SignInLimiter: Sendable {
    private struct Record {
        var failures: [Date] = []
        var consecutive = 0
        var lockedUntil: Date?
    }

    private let perHour: Int
    private let lockoutThreshold: Int
    private let lockout: TimeInterval
    private let records = Mutex<[String: Record]>([:])
    /// Bounds memory under a spray of random emails: the oldest-touched accounts are forgotten first.
    private let capacity = 100_000

    init(perHour: Int, lockoutThreshold: Int, lockoutSeconds: Int) {
        self.perHour = perHour
        self.lockoutThreshold = lockoutThreshold
        self.lockout = TimeInterval(lockoutSeconds)
    }

    /// Whether an attempt for `account` may be checked at all right now.
    func allows(_ account: String, now: Date) -> Bool {
        records.withLock { records in
            guard var record = records[account] else { return true }
            record.failures.removeAll { now.timeIntervalSince($0) >= 3600 }
            records[account] = record
            if let until = record.lockedUntil, now < until { return false }
            return record.failures.count < perHour
        }
    }

    func recordFailure(_ account: String, now: Date) {
        records.withLock { records in
            if records[account] == nil && records.count >= capacity {
                let oldest = records.min { ($0.value.failures.last ?? .distantPast) < ($1.value.failures.last ?? .distantPast) }
                if let oldest { records[oldest.key] = nil }
            }
            var record = records[account] ?? Record()
            record.failures.append(now)
            record.consecutive += 1
            if record.consecutive >= lockoutThreshold {
                record.lockedUntil = now.addingTimeInterval(lockout)
                record.consecutive = 0
            }
            records[account] = record
        }
    }

    func recordSuccess(_ account: String) {
        records.withLock { records in
            records[account]?.consecutive = 0
        }
    }
}
