import Foundation
import Glibc

/// Network helpers for tests that start servers on loopback.
public enum Network {
    /// A TCP port that was free a moment ago on 127.0.0.1 (the kernel picks it).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket() failed") }
        defer { close(fd) }
        guard let port = bindLoopback(fd) else { throw HarnessError("bind() failed") }
        return port
    }

    /// A socket listening on 127.0.0.1, on a port the kernel picks; the caller closes it.
    public static func listener(backlog: Int32 = 8) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket() failed") }
        guard let port = bindLoopback(fd), listen(fd, backlog) == 0 else {
            close(fd)
            throw HarnessError("bind() or listen() failed")
        }
        return (fd, port)
    }

    /// Binds `fd` to 127.0.0.1 on a port the kernel picks, and returns the port.
    private static func bindLoopback(_ fd: Int32) -> Int? {
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// A TCP connection to 127.0.0.1:`port`, or nil if nothing accepts it; the caller closes it.
    public static func connect(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    public static func isListening(port: Int) -> Bool {
        guard let fd = connect(port: port) else { return false }
        close(fd)
        return true
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
