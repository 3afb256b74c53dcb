import Crypto
import Foundation
import Glibc
import HummingbirdBcrypt
import NIOPosix
import Synchronization

/// bcrypt off the event loops, on threads of its own at a lower scheduling priority, with a bound
/// on how many run at once and on how many may wait.
///
/// At cost 12 one hash takes about a third of a second of CPU; unbounded, a storm of sign-ins would
/// take every core from the unlocks. Its threads run at nice 10, so when the CPU is contended a door
/// opening goes first and a sign-in waits; an idle CPU still hashes at full speed. Past the queue
/// bound a hash fails with ``AsyncLimiter/Saturated`` (answered as 503 `server_busy` with
/// `Retry-After`) instead of queueing for ever longer: at once, or after a wait when a hash of a
/// network with fewer places takes its place. The queue's places are shared fairly between the
/// clients' networks (``AsyncLimiter``), so that one network's storm cannot keep everyone else's
/// hashes out.
///
/// The password is first put in Unicode's NFKC form (NIST SP 800-63B §5.1.1.2), so that an `é`
/// typed as one code point on one keyboard and as e and a combining accent on another is the same
/// password, and then reduced with SHA-256 (base64, 44 bytes) because bcrypt silently ignores
/// everything after its 72nd byte, and passwords here may be 128 characters of any script.
///
/// Hashes made before the normalisation hold the password as it was typed. Where the typed form is
/// not already NFKC (nearly every password is: ASCII and precomposed letters are), a verification
/// that fails on the normal form tries the typed form as well, so those passwords keep working.
public final class PasswordHasher: Sendable {
    let cost: Int
    private let limiter: AsyncLimiter
    private let pool: NIOThreadPool
    /// What ``verifyNothing(_:client:)`` checks against: ``timingHash(cost:)`` of this hasher's cost.
    private let timingHash: String
    private let made = Atomic<Int>(0)

    /// How many hashes of new passwords were made (for tests).
    var hashesMade: Int { made.load(ordering: .relaxed) }

    /// - Parameter maxWaiting: how many hashes may wait for a slot; eight is about two to three
    ///   seconds of queue at cost 12 with one slot.
    public init(cost: Int, concurrency: Int, maxWaiting: Int = 8) {
        self.cost = cost
        self.timingHash = Self.timingHash(cost: cost)
        self.limiter = AsyncLimiter(limit: concurrency, maxWaiting: maxWaiting)
        self.pool = NIOThreadPool(numberOfThreads: concurrency)
        pool.start()
    }

    deinit { pool.shutdownGracefully { _ in } }

    /// The client of work done on behalf of no remote one (bootstrap on the server's host, tests).
    /// Every other caller names its client: one left out would share this network with the rest.
    public static let localClient = "local"

    /// - Parameters:
    ///   - client: whose request this is (``ClientAddress``), for the fair share of the queue.
    ///   - queueing: wait for a slot even when the queue is full (see ``AsyncLimiter/run(network:queueing:_:)``).
    public func hash(_ password: String, client: String, queueing: Bool = false) async throws -> String {
        let input = Self.prehash(Self.normalised(password))
        let cost = UInt8(self.cost)
        return try await limiter.run(network: ClientAddress.network(of: client), queueing: queueing) {
            try await pool.runIfActive {
                Self.yieldToOtherWork()
                defer { self.made.add(1, ordering: .relaxed) }
                return Bcrypt.hash(input, cost: cost)
            }
        }
    }

    public func verify(_ password: String, hash: String, client: String) async throws -> Bool {
        let normal = Self.normalised(password)
        // Both forms in one turn of the pool: the second costs a bcrypt only when the first failed
        // and the typed form differs, which depends on what was typed, never on the account.
        // Bytes, not `==`, which takes canonically equivalent strings (é and e + ́) for equal.
        let typedIsNormal = normal.utf8.elementsEqual(password.utf8)
        let inputs = typedIsNormal ? [Self.prehash(normal)] : [Self.prehash(normal), Self.prehash(password)]
        let rounds = Self.roundsToMatch(cost: cost, hash: hash)
        return try await limiter.run(network: ClientAddress.network(of: client)) {
            try await pool.runIfActive {
                Self.yieldToOtherWork()
                if inputs.contains(where: { Bcrypt.verify($0, hash: hash) }) { return true }
                // A hash made at a lower cost (before the operator raised it) fails faster than the
                // throwaway hash of an unknown email: the same work again until the times match, so
                // that a failure's time does not tell which emails have accounts.
                for _ in 1..<rounds { _ = inputs.contains { Bcrypt.verify($0, hash: hash) } }
                return false
            }
        }
    }

    /// The bcrypt cost `hash` was made at, or nil if it is not a bcrypt hash.
    static func cost(of hash: String) -> Int? {
        // $2b$12$…: the version, then the cost in two digits.
        let parts = hash.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[2].utf8.count == 2 else { return nil }
        return Int(parts[2])
    }

    /// Whether `hash` was made at another cost than the current one (and should be made again).
    func isOutdated(_ hash: String) -> Bool { Self.cost(of: hash).map { $0 != cost } ?? false }

    /// How many verifications against `hash` take as long as one at `cost`: each cost step doubles
    /// bcrypt's work. One for a hash at the current cost or above (or not bcrypt), at most 2^8.
    static func roundsToMatch(cost: Int, hash: String) -> Int {
        guard let made = Self.cost(of: hash), made < cost else { return 1 }
        return 1 << min(cost - made, 8)
    }

    /// Lowers the calling thread (one of this hasher's own) to nice 10. On Linux the nice value is
    /// per thread and `who == 0` is the calling thread; raising niceness needs no privilege, and it
    /// is never lowered back, so repeating it is harmless.
    private static func yieldToOtherWork() {
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
    }

    /// Verifies against a throwaway hash of the same cost: a sign-in for an account that does not
    /// exist (or has no password) costs as much time as a wrong password, so timing reveals nothing,
    /// from the first such sign-in after a start on (no hash is made for it first).
    public func verifyNothing(_ password: String, client: String) async throws {
        _ = try await verify(password, hash: timingHash, client: client)
    }

    /// A bcrypt string of `cost` that no password is known to match: the salt and digest of a genuine
    /// bcrypt output (the published test vector of `U*U` at cost 5), with the cost set to `cost`.
    /// Checking a password against it runs bcrypt in full at that cost, as against any account's
    /// hash; the salt is well formed, so nothing refuses it early.
    static func timingHash(cost: Int) -> String {
        "$2b$" + (cost < 10 ? "0" : "") + "\(cost)$" + timingHashSaltAndDigest
    }

    static let timingHashSaltAndDigest = "CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"

    /// NFKC: compatibility characters folded (the ligature `ﬁ` is `fi`), then composed.
    static func normalised(_ password: String) -> String {
        password.precomposedStringWithCompatibilityMapping
    }

    static func prehash(_ password: String) -> String {
        Data(SHA256.hash(data: Array(password.utf8))).base64EncodedString()
    }
}
