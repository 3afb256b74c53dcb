import Foundation
import SiteHarness

/// What the kernel says about a process.
enum ProcessStats {
    /// Resident memory in MiB, from /proc/PID/status (VmRSS).
    static func residentMiB(pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kib = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kib / 1024
    }

    /// CPU time used so far (user and system, all threads) in seconds, from /proc/PID/stat.
    static func cpuSeconds(pid: Int32) -> Double? {
        guard let stat = ProcStat(path: "/proc/\(pid)/stat"), let user = stat.field(14).flatMap({ Double($0) }),
            let system = stat.field(15).flatMap({ Double($0) })
        else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
