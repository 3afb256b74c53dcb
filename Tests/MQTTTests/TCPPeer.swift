import Foundation
import Glibc
import Posix

/// A test's own end of a loopback TCP connection made by the code under test, and what the kernel
/// says of the other end.
enum TCPPeer {
    /// Accepts a connection on `listener` if one arrives within `timeout`; the caller closes it.
    static func accept(_ listener: Int32, timeout: Duration) -> Int32? {
        var waiting = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        guard poll(&waiting, 1, Int32(milliseconds)) == 1 else { return nil }
        let fd = Glibc.accept(listener, nil, nil)
        return fd >= 0 ? fd : nil
    }

    /// Accepts connections on `listener` for up to `timeout` and returns the first whose first bytes
    /// (its MQTT CONNECT) carry `clientID`; the caller closes it. Any other is closed and waited past:
    /// tests run side by side, and a client of another, retrying a port that the kernel has since
    /// given this listener, is not the one under test.
    static func accept(_ listener: Int32, from clientID: String, timeout: Duration) -> Int32? {
        accept(listener, fromOneOf: [clientID], timeout: timeout)?.fd
    }

    /// As `accept(_:from:timeout:)` for the first connection from any of `clientIDs`, and which one
    /// it is.
    static func accept(_ listener: Int32, fromOneOf clientIDs: Set<String>, timeout: Duration) -> (fd: Int32, clientID: String)? {
        let deadline = ContinuousClock.now + timeout
        while case let left = deadline - .now, left > .zero {
            guard let fd = accept(listener, timeout: left) else { return nil }
            var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            var bytes = [UInt8](repeating: 0, count: 1024)
            let count = poll(&waiting, 1, 2000) == 1 ? read(fd, &bytes, bytes.count) : 0
            let sent = count > 0 ? bytes[0..<count] : []
            if let id = clientIDs.first(where: { sent.firstRange(of: lengthPrefixed($0)) != nil }) { return (fd, id) }
            close(fd)
        }
        return nil
    }

    /// A string as MQTT writes it: its UTF-8 length in two bytes, high first, then the bytes. So
    /// `lock-1` is not found in the CONNECT of `lock-12`.
    private static func lengthPrefixed(_ string: String) -> [UInt8] {
        let utf8 = Array(string.utf8)
        return [UInt8(utf8.count >> 8), UInt8(utf8.count & 0xFF)] + utf8
    }

    /// The inode of the client's socket of the connection accepted as `fd`, from `/proc/net/tcp`.
    static func inode(ofClientOf fd: Int32) -> String? {
        guard let server = LoopbackSocket.localPort(of: fd), let client = LoopbackSocket.peerPort(of: fd) else { return nil }
        // Addresses as the kernel writes them: 127.0.0.1 in memory order, the port in hex.
        let local = "0100007F:" + String(format: "%04X", client)
        let remote = "0100007F:" + String(format: "%04X", server)
        return TCPTable.rows().first { $0.local == local && $0.remote == remote }.map { String($0.inode) }
    }

    /// Whether a descriptor of this process refers to the socket `inode`.
    static func processHolds(socket inode: String) -> Bool {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == "socket:[\(inode)]" }
    }
}
