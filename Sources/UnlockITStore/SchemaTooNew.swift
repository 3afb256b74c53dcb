/// The database was migrated by a newer UnlockIT: it has migrations this version does not know,
/// so this version would read and write rows that do not fit. Opening it is refused.
public struct SchemaTooNew: Error, Sendable, Equatable, CustomStringConvertible {
    public let path: String
    /// The applied migrations this version does not know.
    public let unknown: [String]

    public init(path: String, unknown: [String]) {
        self.path = path
        self.unknown = unknown
    }

    public var description: String {
        "the database \(path) was migrated by a newer UnlockIT (\(unknown.joined(separator: ", "))); "
            + "run that version, or restore a backup this version made"
    }
}
