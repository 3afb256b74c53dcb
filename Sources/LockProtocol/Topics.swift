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
    public static func parse(_ topic: String) -> (lock: LockID, kind: Kind)? {
        let prefix = root + "/"
        guard topic.hasPrefix(prefix) else { return nil }
        let rest = topic.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard rest.count == 2, let lock = LockID(String(rest[0])) else { return nil }
        switch rest[1] {
        case "cmd": return (lock, .command)
        case "evt": return (lock, .event)
        case "status": return (lock, .status)
        default: return nil
        }
    }
}
