import Foundation

/// A file that holds a secret (the master key, the broker password): read only when it is a regular
/// file that neither its group nor others can read, as ssh treats a private key.
enum PrivateFile {
    enum Failure: Error, Equatable {
        case unreadable
        /// Readable by its group or others: its permission bits.
        case exposed(mode: Int)
    }

    /// The text of the file at `path` (a symbolic link is followed, and its target checked).
    static func read(_ path: String) throws(Failure) -> String {
        let file = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file),
            attributes[.type] as? FileAttributeType == .typeRegular,
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue
        else { throw .unreadable }
        guard mode & 0o077 == 0 else { throw .exposed(mode: mode) }
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { throw .unreadable }
        return text
    }
}
