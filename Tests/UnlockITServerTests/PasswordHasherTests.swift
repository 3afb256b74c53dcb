import Foundation
import Glibc
import HummingbirdBcrypt
import SiteHarness
import Testing

@testable import UnlockITServer

private let local = PasswordHasher.localClient

@Suite struct PasswordHasherTests {
    /// The nice values of this process's threads, from /proc (field 19 of each thread's stat line).
    private static func niceValues() throws -> [Int] {
        // A thread of another suite may end between the listing and the read: it is skipped.
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap { task in
            ProcStat(path: "/proc/self/task/\(task)/stat")?.field(19).flatMap { Int($0) }
        }
    }

    @Test("bcrypt runs on threads of its own at nice 10, and leaves the caller's priority alone")
    func hashesAtLowPriority() async throws {
        let hasher = PasswordHasher(cost: 4, concurrency: 1)
        let hash = try await hasher.hash("correct horse battery staple", client: local)
        #expect(try await hasher.verify("correct horse battery staple", hash: hash, client: local))
        #expect(try await !hasher.verify("wrong horse battery staple", hash: hash, client: local))

        // Other suites' hashers may run in parallel, so this counts at least one such thread (ours is
        // alive until `hasher` goes); nothing else in the process runs at nice 10.
        let lowered = try Self.niceValues().filter { $0 == 10 }.count
        #expect(lowered >= 1)
        withExtendedLifetime(hasher) {}
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == 0)
    }

    @Test("A password is the same however its accents were typed, and hashes from before that still verify")
    func passwordsAreNormalised() async throws {
        let hasher = PasswordHasher(cost: 4, concurrency: 1)
        let composed = "Kaffe på café \u{E9}\u{E5}"
        let decomposed = "Kaffe pa\u{30A} cafe\u{301} e\u{301}a\u{30A}"
        // Swift's == compares canonically equivalent strings as equal; what is hashed are the bytes.
        #expect(Array(composed.utf8) != Array(decomposed.utf8))
        let hash = try await hasher.hash(decomposed, client: local)
        #expect(try await hasher.verify(composed, hash: hash, client: local))
        #expect(try await hasher.verify(decomposed, hash: hash, client: local))
        #expect(try await hasher.verify("of\u{FB01}ce pass phrase", hash: try await hasher.hash("office pass phrase", client: local), client: local))
        #expect(try await !hasher.verify("Kaffe pa cafe ea", hash: hash, client: local))

        // A hash made before the normalisation, of the typed (decomposed) form, keeps verifying.
        let legacy = Bcrypt.hash(PasswordHasher.prehash(decomposed), cost: 4)
        #expect(try await hasher.verify(decomposed, hash: legacy, client: local))
    }

    @Test("An unknown account's password is checked against a hash of the current cost, with no hash made for it first")
    func theThrowawayHashNeedsNoHashing() async throws {
        let hasher = PasswordHasher(cost: 5, concurrency: 1)
        try await hasher.verifyNothing("any password at all", client: local)
        #expect(hasher.hashesMade == 0)
        for cost in [4, 5, 10, 12, 31] {
            let hash = PasswordHasher.timingHash(cost: cost)
            #expect(PasswordHasher.cost(of: hash) == cost && PasswordHasher.roundsToMatch(cost: cost, hash: hash) == 1, "\(hash)")
        }
        // At cost 5 it is the test vector itself: a genuine bcrypt output, whose salt bcrypt takes,
        // so a check against it at any cost runs in full rather than being refused as malformed.
        #expect(Bcrypt.verify("U*U", hash: PasswordHasher.timingHash(cost: 5)))
        #expect(!Bcrypt.verify("U*U", hash: PasswordHasher.timingHash(cost: 6)))
    }

    @Test("A failure against a hash of a lower cost is repeated until it takes as long as one at the current cost")
    func lowerCostHashesArePaddedToTheCurrentCost() async throws {
        let hasher = PasswordHasher(cost: 12, concurrency: 1)
        let hash = try await hasher.hash("correct horse battery staple", client: local)
        #expect(PasswordHasher.cost(of: hash) == 12 && !hasher.isOutdated(hash))
        #expect(PasswordHasher.roundsToMatch(cost: 12, hash: hash) == 1)
        #expect(PasswordHasher.roundsToMatch(cost: 13, hash: hash) == 2)
        #expect(PasswordHasher.roundsToMatch(cost: 15, hash: hash) == 8)
        #expect(PasswordHasher.roundsToMatch(cost: 31, hash: hash) == 256)
        // A hash of a higher cost, or not bcrypt at all, is verified once.
        #expect(PasswordHasher.roundsToMatch(cost: 12, hash: hash.replacingOccurrences(of: "$12$", with: "$14$")) == 1)
        #expect(PasswordHasher.roundsToMatch(cost: 13, hash: "plain") == 1 && PasswordHasher.cost(of: "plain") == nil)
        #expect(PasswordHasher(cost: 13, concurrency: 1).isOutdated(hash))
        // Padded or not, the answers are the same.
        let stricter = PasswordHasher(cost: 13, concurrency: 1)
        #expect(try await stricter.verify("correct horse battery staple", hash: hash, client: local))
        #expect(try await !stricter.verify("wrong horse battery staple", hash: hash, client: local))
    }
}
