import Foundation
import Glibc
import SiteHarness
import Testing

/// The processes the benchmark and the tests start end with them, even when they are killed
/// outright and cannot stop their children themselves.
@Suite(.timeLimit(.minutes(10)))
struct ChildProcessEndToEndTests {
    struct Child {
        let pid: pid_t
        let name: String
    }

    @Test func aChildHoldsNoneOfThisProcesssDescriptors() async throws {
        // A pipe without close-on-exec, as libmosquitto's sockets are.
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        let shell = try ChildProcess(try Binaries.system("sh"), ["-c", "ls /proc/$$/fd"], name: "sh")
        #expect(try await shell.waitForExit() == 0)
        let open = Set(shell.output.compactMap { Int32($0.trimmingCharacters(in: .whitespaces)) })
        #expect(open.isDisjoint(with: ends), "the child holds \(open)")
        #expect(open.isSuperset(of: [0, 1, 2]))
    }

    @Test func aKilledBenchmarkLeavesNothingRunning() async throws {
        let scratch = try TemporaryDirectory("unlockit-orphans")
        let bench = try ChildProcess(
            try Binaries.path("unlockit-bench"), ["--smoke", "--hold", "--output", "\(scratch.path)/out"],
            environment: ["TMPDIR": "\(scratch.path)/"], name: "unlockit-bench")
        // Once it activates the locks, the broker, the server and the fleet are all running.
        try await bench.waitForLine(containing: "activating locks", timeout: .seconds(300))
        let children = Self.children(of: bench.pid)
        // Should anything be left, it must not outlive the test.
        defer { for child in children where Self.isAlive(child) { kill(child.pid, SIGKILL) } }
        #expect(Set(children.map(\.name)).isSuperset(of: ["mosquitto", "unlockit-server", "unlockit-lock"]))

        bench.kill9()
        try await Network.waitUntil("the benchmark's broker, server and locks to end", timeout: .seconds(30)) {
            children.allSatisfy { !Self.isAlive($0) }
        }
    }

    /// The running children of `parent`, from `/proc`.
    static func children(of parent: pid_t) -> [Child] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry in
            guard let pid = pid_t(entry), let stat = ProcStat(path: "/proc/\(pid)/stat"), stat.field(4).flatMap({ pid_t($0) }) == parent,
                stat.state != "Z"
            else { return nil }
            return Child(pid: pid, name: stat.name)
        }
    }

    /// Running, not a zombie, and still the same program (a pid can be reused).
    static func isAlive(_ child: Child) -> Bool {
        guard let stat = ProcStat(path: "/proc/\(child.pid)/stat") else { return false }
        return stat.name == child.name && stat.state != "Z"
    }
}
