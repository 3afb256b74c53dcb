import Foundation
import Logging
import Synchronization
import UnlockITCore

/// How many answers of one kind one company's admins may be given in a day, counted per company
/// over a sliding day: device ids and email addresses found in use by other companies (one budget
/// each), and wrong setup codes.
///
/// An email address signs its user in and a device id names a lock's broker account, so each is
/// unique across every company, and an admin who creates, imports or renames a user, or registers a
/// lock, is told `email_taken` or `lock_id_taken` for a name someone else has. That answer is
/// needed, and it also tells one company which names another company uses: which addresses its
/// people have, which devices it bought (an import checks up to 10,000 addresses in one request, a
/// dry run without changing anything). So each such answer about another company's name counts
/// against the asking company's budget (its own names never count: its admins can list them
/// anyway). A setup code is checked against a factory device id, or by the lock, and each wrong one
/// counts in the same way, taken before the code is checked (``take(for:now:refusal:)``): the
/// server answers guesses only so often, and its audit log does not fill with them. (A factory id
/// lets whoever has it test guesses offline; the code's 80 bits are what protect it.)
///
/// Once `perDay` have been counted within a day, every request of the company that would be given
/// such an answer is answered 429 (`too_many_taken_emails`, `too_many_taken_lock_ids`,
/// `too_many_wrong_setup_codes`), whatever it asks, until the oldest of those answers is a day old:
/// an answer that depended on the request would go on telling names (or codes) apart. A request
/// that finds more than is left of the budget uses it all up and learns only that.
final class CompanyDailyBudget: Sendable {
    static let window: TimeInterval = 24 * 60 * 60

    private let perDay: Int
    /// The counted answers of the last day per company, oldest first; at most `perDay` of them.
    private let records = Mutex<[CompanyID: [Date]]>([:])

    init(perDay: Int) {
        self.perDay = perDay
    }

    /// `nil` when the company's admins may be given such answers now; otherwise how long until they may.
    func wait(for company: CompanyID, now: Date) -> Duration? {
        records.withLock { records in
            guard let recent = records[company], recent.count >= perDay else { return nil }
            let free = recent[recent.count - perDay].addingTimeInterval(Self.window)
            guard free > now else { return nil }
            return .milliseconds(Int64((free.timeIntervalSince(now) * 1000).rounded(.up)))
        }
    }

    /// Counts `count` answers (names found in use by other companies, wrong codes). Returns false
    /// when they do not all fit in what is left of the budget; the budget is then used up. Counting
    /// none returns whether the budget is still open.
    func count(_ count: Int, for company: CompanyID, now: Date) -> Bool {
        record(count, for: company, now: now).fits
    }

    /// ``count(_:for:now:)``, and whether the budget was open before, in one step.
    private func record(_ count: Int, for company: CompanyID, now: Date) -> (fits: Bool, wasOpen: Bool) {
        records.withLock { records in
            var recent = records[company, default: []].filter { now.timeIntervalSince($0) < Self.window }
            let wasOpen = recent.count < perDay
            guard count > 0 else { return (wasOpen, wasOpen) }
            let fits = recent.count + count <= perDay
            recent.append(contentsOf: repeatElement(now, count: max(0, min(count, perDay - recent.count))))
            records[company] = recent
            return (fits, wasOpen)
        }
    }

    /// Takes one answer from the company's budget before it is known whether it counts (whether a
    /// setup code is wrong), in one step with the check: of many requests at once, only as many as
    /// are left go ahead, and the rest are refused before they are answered. Returns the taken
    /// answer's date, for ``giveBack(_:for:)`` once it turns out not to count; throws `refusal` when
    /// none is left.
    func take(for company: CompanyID, now: Date, refusal: (Duration) -> APIError) throws -> Date {
        // One that does not fit is not counted: the budget is already used up.
        guard count(1, for: company, now: now) else { throw refusal(wait(for: company, now: now) ?? .seconds(Self.window)) }
        return now
    }

    /// Gives back an answer ``take(for:now:refusal:)`` took, which did not count.
    func giveBack(_ taken: Date, for company: CompanyID) {
        records.withLock { records in
            guard let index = records[company]?.lastIndex(of: taken) else { return }
            records[company]?.remove(at: index)
        }
    }

    /// Throws `refusal` while the company's admins may not be given answers of this kind.
    func requireOpen(for company: CompanyID, now: Date, refusal: (Duration) -> APIError) throws {
        if let wait = wait(for: company, now: now) { throw refusal(wait) }
    }

    /// Counts `answers` given to `admin` (names in use by other companies, wrong codes), and throws
    /// `refusal` when they do not all fit in what is left. The request that spends the budget, fitting or not, logs
    /// `warning` with the company and the admin: the operator learns of the pause when it begins.
    ///
    /// Called once the request has looked its names up, with none when it found none in use by
    /// others: it is refused all the same once the budget is spent, perhaps by another request while
    /// it looked. The decision is this one step, so of requests at once none is told a free name
    /// from a taken one after the budget ran out. (A check before the lookups would only be a
    /// shortcut, and one that a request in flight passes before the budget runs out.)
    func count(_ answers: Int, by admin: User, now: Date, logger: Logger, warning: Logger.Message, refusal: (Duration) -> APIError) throws {
        let (fits, wasOpen) = record(answers, for: admin.companyID, now: now)
        // Spent before this request: refused, and said already by the request that spent it.
        guard wasOpen else { throw refusal(wait(for: admin.companyID, now: now) ?? .seconds(Self.window)) }
        guard answers > 0 else { return }
        let wait = warnIfSpent(by: admin, now: now, logger: logger, warning: warning)
        if !fits { throw refusal(wait ?? .seconds(Self.window)) }
    }

    /// Logs `warning` with the company and `admin` when the company's budget is spent, and returns
    /// how long until it is open again: the request that spends it tells the operator of the pause.
    @discardableResult
    func warnIfSpent(by admin: User, now: Date, logger: Logger, warning: Logger.Message) -> Duration? {
        let wait = self.wait(for: admin.companyID, now: now)
        if wait != nil { logger.warning(warning, metadata: ["company": "\(admin.companyID)", "admin": "\(admin.id)"]) }
        return wait
    }
}
