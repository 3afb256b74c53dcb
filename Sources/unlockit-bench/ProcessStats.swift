import Foundation

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
}
