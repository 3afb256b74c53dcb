import Foundation
import UnlockITCore
import UnlockITLocalization

/// Progress of a long step: a bar redrawn in place on a terminal, plain lines otherwise (every 10 %),
/// on stderr so that stdout stays clean.
struct Progress {
    let label: String
    let total: Int
    private let terminal = Terminal.stderrIsTerminal
    private var lastReported = -1

    init(label: String, total: Int) {
        self.label = label
        self.total = max(total, 1)
    }

    mutating func update(_ done: Int) {
        let percent = done * 100 / total
        if terminal {
            let width = 30
            let filled = width * done / total
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            Terminal.write("\r\(label) [\(bar)] \(done)/\(total)", to: 2)
            if done >= total { Terminal.write("\n", to: 2) }
        } else if percent / 10 != lastReported / 10 || done >= total {
            Terminal.error("\(label): \(done)/\(total)")
        }
        lastReported = percent
    }
}
