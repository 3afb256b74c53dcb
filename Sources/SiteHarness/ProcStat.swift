import Foundation

/// A process's or thread's line in `/proc/…/stat`: "pid (name) S ppid …". The name may hold spaces
/// and parentheses; the fields after its last ")" hold neither.
public struct ProcStat: Sendable {
    public let name: String
    /// Fields 3 (the state) onwards.
    private let fields: [Substring]

    /// Reads `path`, such as `/proc/123/stat` or `/proc/self/task/456/stat`; nil once the process or
    /// thread is gone.
    public init?(path: String) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")")
        else { return nil }
        name = String(text[text.index(after: open)..<close])
        fields = text[text.index(after: close)...].split(separator: " ")
        guard !fields.isEmpty else { return nil }
    }

    /// Field `number` as `proc(5)` numbers them (3 is the state, 4 the parent, 14 and 15 the user
    /// and system time, 19 the nice value); nil for the pid and name or past the end.
    public func field(_ number: Int) -> Substring? {
        let index = number - 3
        return fields.indices.contains(index) ? fields[index] : nil
    }

    /// The scheduler state: `R`, `S`, `T`, `Z`, …
    public var state: Character { fields[0].first! }
}
