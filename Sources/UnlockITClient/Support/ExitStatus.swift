/// The exit statuses of `unlockit`, documented in docs/cli.md. Scripts can tell the failures apart.
public enum ExitStatus: Int32, Sendable, CaseIterable {
    case success = 0
    /// Anything not covered below: the server refused the change, a name was not found, bad data…
    case failure = 1
    /// Not signed in, or the session expired or was revoked.
    case notSignedIn = 3
    /// Signed in, but not allowed: not an admin, a disabled account, a password still to change.
    case forbidden = 4
    /// The access rule (or the lock) refused to open the door.
    case accessDenied = 5
    /// The lock or its broker could not be reached.
    case lockUnreachable = 6
    /// The server could not be reached.
    case serverUnreachable = 7
    /// The command line itself is wrong.
    case usage = 64
    /// The credentials file is readable by others and was refused.
    case insecureCredentials = 78
}
