import Glibc

/// A process that holds thousands of MQTT connections (a fleet of simulated locks, a benchmark
/// starting a broker for them) needs more file descriptors than the usual soft limit.
public enum FileDescriptorLimit {
    /// Raises the soft limit to `wanted`, raising the hard limit too where the process may
    /// (root may); otherwise up to the hard limit. Children inherit the new limits.
    public static func raise(to wanted: Int = 1 << 20) {
        let resource = __rlimit_resource_t(UInt32(RLIMIT_NOFILE.rawValue))
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return }
        let target = rlim_t(wanted)
        var raised = rlimit(rlim_cur: target, rlim_max: max(target, limit.rlim_max))
        if setrlimit(resource, &raised) != 0 {
            raised = rlimit(rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max)
            _ = setrlimit(resource, &raised)
        }
    }

    /// What one client of this module holds open: its socket, and the socket pair libmosquitto
    /// creates with each client to wake its own loop unless `SocketPair` may take it away, as it
    /// may from the versions it knows (1.6, 2.0), checked once in this process.
    public static let perClient = SocketPair.isDetachable ? 1 : 3

    /// How many clients fit under the current limit, each holding `alsoPerClient` descriptors of its
    /// owner's besides, keeping `reserve` descriptors for the rest.
    public static func clientCapacity(reserve: Int = 256, alsoPerClient: Int = 0) -> Int {
        max(0, (current - reserve) / (perClient + alsoPerClient))
    }

    /// The current soft limit.
    public static var current: Int {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(UInt32(RLIMIT_NOFILE.rawValue)), &limit)
        return Int(limit.rlim_cur)
    }
}
