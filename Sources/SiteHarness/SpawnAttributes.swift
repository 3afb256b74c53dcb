import Glibc

/// `posix_spawn` attributes for a test's child. The test runner may ignore or block signals; the
/// child starts with every signal at its default and none blocked.
public enum SpawnAttributes {
    /// POSIX_SPAWN_SETSID (glibc 2.26 on), which Swift's Glibc module does not declare: the child
    /// starts a session of its own, so that a terminal it opens becomes its controlling terminal.
    public static let newSession: Int32 = 0x80

    /// Runs `body` with the attributes, plus `flags`.
    public static func withDefaultSignals<T>(flags: Int32 = 0, _ body: (inout posix_spawnattr_t) -> T) -> T {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t()
        sigfillset(&all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | flags))
        return body(&attributes)
    }
}
