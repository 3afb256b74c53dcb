import Glibc

/// What `fstat` and `lstat` say of a file, read in a module that sees only Glibc's `struct stat`.
///
/// NIO's C module declares the system's structs too. In a module that loads both, which one the
/// compiler credits with a member such as `st_mode` depends on the order it loads them in, and
/// `MemberImportVisibility` then refuses the member where that module is not imported; only a clean
/// build shows it (it did twice). So the members are read here, where NIO is never loaded.
public struct FileStatus: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case regular, directory, symbolicLink, other
    }

    public let kind: Kind
    /// The permission bits (and set-id and sticky bits): `st_mode & 0o7777`.
    public let permissions: UInt32
    /// The owner's user id.
    public let owner: UInt32

    /// The file `descriptor` refers to; nil if `fstat` fails.
    public init?(descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The file at `path`, a symbolic link itself and not what it points to; nil if `lstat` fails.
    public init?(linkAt path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    private init(_ info: stat) {
        kind =
            switch info.st_mode & S_IFMT {
            case S_IFREG: .regular
            case S_IFDIR: .directory
            case S_IFLNK: .symbolicLink
            default: .other
            }
        permissions = UInt32(info.st_mode & 0o7777)
        owner = UInt32(info.st_uid)
    }

    /// Whether the file belongs to the user this process runs as.
    public var isOwnedByCurrentUser: Bool { owner == UInt32(getuid()) }

    /// Whether its group or others may do anything with it.
    public var isOpenToOthers: Bool { permissions & 0o077 != 0 }
}
