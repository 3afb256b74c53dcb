import Foundation

/// A progress bar on stderr.
struct ProgressBar {
    let label: String
    let total: Int
    private var shown = -1

    init(_ label: String, total: Int) {
        self.label = label
        self.total = max(total, 1)
    }

    /// Redrawn in place on a terminal; a line every 10 % otherwise.
    mutating func update(_ done: Int) {
        let percent = done * 100 / total
        let terminal = isatty(STDERR_FILENO) == 1
        guard terminal ? percent != shown : (percent / 10 != shown / 10 || done >= total) else { return }
        shown = percent
        let filled = 30 * done / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled)
        let text = "\(label) [\(bar)] \(done)/\(total)"
        FileHandle.standardError.write(Data((terminal ? "\r\(text)\(done >= total ? "\n" : "")" : text + "\n").utf8))
    }
}
