import Foundation
import Glibc
import Testing

@testable import UnlockITServer

@Suite struct PasswordHasherTests {
    /// The nice values of this process's threads, from /proc (field 19 of each thread's stat line).
    private static func niceValues() throws -> [Int] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap { task in
            // A thread of another suite may end between the listing and the read: it is skipped.
            guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8) else { return nil }
            // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
            guard let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return Int(fields[16])  // field 19 overall: fields 3… start here at index 0
        }
    }

    @Test("bcrypt runs on threads of its own at nice 10, and leaves the caller's priority alone")
    func hashesAtLowPriority() async throws {
        let hasher = PasswordHasher(cost: 4, concurrency: 1)
        let hash = try await hasher.hash("correct horse battery staple")
        #expect(try await hasher.verify("correct horse battery staple", hash: hash))
        #expect(try await !hasher.verify("wrong horse battery staple", hash: hash))

        // Other suites' hashers may run in parallel, so this counts at least one such thread (ours is
        // alive until `hasher` goes); nothing else in the process runs at nice 10.
        let lowered = try Self.niceValues().filter { $0 == 10 }.count
        #expect(lowered >= 1)
        withExtendedLifetime(hasher) {}
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == 0)
    }
}
