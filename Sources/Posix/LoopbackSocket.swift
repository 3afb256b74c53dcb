import Glibc

/// IPv4 loopback sockets (the test harness's): bound where the kernel picks a port, or connected to
/// one. Here because they fill in `sockaddr_in` (see ``FileStatus`` for why not beside NIO).
public enum LoopbackSocket {
    /// Binds `fd` to 127.0.0.1 on `port` (0: the kernel picks one); the port bound, or nil (also for
    /// a port outside 0–65535).
    public static func bind(_ fd: Int32, port: Int = 0) -> Int? {
        guard var address = loopback(port: port) else { return nil }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        return bound ? localPort(of: fd) : nil
    }

    /// Connects `fd` to 127.0.0.1:`port`; whether it did (never for a port outside 0–65535).
    public static func connect(_ fd: Int32, port: Int) -> Bool {
        guard var address = loopback(port: port) else { return false }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// The port of the IPv4 socket `fd`'s own end (`getsockname`), or nil.
    public static func localPort(of fd: Int32) -> Int? { port(fd, getsockname) }

    /// The port of the IPv4 socket `fd`'s peer (`getpeername`), or nil.
    public static func peerPort(of fd: Int32) -> Int? { port(fd, getpeername) }

    private static func port(
        _ fd: Int32, _ name: (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?) -> Int32
    ) -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let found = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { name(fd, $0, &length) == 0 }
        }
        return found && address.sin_family == sa_family_t(AF_INET) ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    private static func loopback(port: Int) -> sockaddr_in? {
        guard let port = UInt16(exactly: port) else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(port.bigEndian)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        return address
    }
}
