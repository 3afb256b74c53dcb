import UnlockITCore

/// The MQTT topics of the lock protocol (protocol.md, "Transport").
public enum Topics {
    public static let root = "unlockit/v1/locks"

    /// server → lock
    public static func command(_ lock: LockID) -> String { "\(root)/\(lock.rawValue)/cmd" }
    /// lock → server
    public static func event(_ lock: LockID) -> String { "\(root)/\(lock.rawValue)/evt" }
    /// lock → retained online/offline status; the lock's last will writes the offline form.
    public static func status(_ lock: LockID) -> String { "\(root)/\(lock.rawValue)/status" }

    /// What the server subscribes to.
    public static let allEvents = "\(root)/+/evt"
    public static let allStatuses = "\(root)/+/status"
    /// What the server publishes to (its broker role).
    public static let allCommands = "\(root)/+/cmd"

    public enum Kind: Sendable, Equatable { case command, event, status }

    /// Splits `unlockit/v1/locks/L/kind` into the lock id and the kind; `nil` for any other topic.
    /// On every message either side receives: read as UTF-8 bytes, not split into `Character`s.
    public static func parse(_ topic: String) -> (lock: LockID, kind: Kind)? {
        let bytes = topic.utf8
        guard bytes.starts(with: prefix) else { return nil }
        let rest = bytes.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        let name = rest[rest.index(after: slash)...]
        let kind: Kind
        if name.elementsEqual("cmd".utf8) {
            kind = .command
        } else if name.elementsEqual("evt".utf8) {
            kind = .event
        } else if name.elementsEqual("status".utf8) {
            kind = .status
        } else {
            return nil
        }
        guard let lock = LockID(String(Substring(rest[..<slash]))) else { return nil }
        return (lock, kind)
    }

    private static let prefix = Array((root + "/").utf8)
}
