import Foundation
import Glibc
import Posix

/// Network helpers for tests that start servers on loopback.
public enum Network {
    /// A TCP port that was free a moment ago on 127.0.0.1 (the kernel picks it).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket() failed") }
        defer { close(fd) }
        guard let port = LoopbackSocket.bind(fd) else { throw HarnessError("bind() failed") }
        return port
    }

    /// A socket listening on 127.0.0.1, on a port the kernel picks; the caller closes it.
    public static func listener(backlog: Int32 = 8) throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket() failed") }
        guard let port = LoopbackSocket.bind(fd), listen(fd, backlog) == 0 else {
            close(fd)
            throw HarnessError("bind() or listen() failed")
        }
        return (fd, port)
    }

    /// A TCP connection to 127.0.0.1:`port`, or nil if nothing accepts it; the caller closes it.
    /// `receiveBuffer` sets the socket's receive buffer (SO_RCVBUF) before it connects, which bounds
    /// what the server can send before this side reads.
    public static func connect(port: Int, receiveBuffer: Int32? = nil) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        if var size = receiveBuffer, setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            close(fd)
            return nil
        }
        guard LoopbackSocket.connect(fd, port: port) else {
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
}
