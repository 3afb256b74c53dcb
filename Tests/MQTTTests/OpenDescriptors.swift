import Foundation

/// This process's open descriptors as the kernel lists them in `/proc/self/fd`, told apart into TCP
/// sockets, by the port at their other end, and everything else. Tests run side by side in one
/// process, so a count of every descriptor moves with theirs; these counts let a test look at its
/// own.
struct OpenDescriptors {
    /// The remote port of each TCP socket this process holds.
    let remotePorts: [Int]
    /// Descriptors that are not TCP sockets: Unix sockets, pipes, event descriptors, files.
    let otherThanTCP: Int

    /// Reads the descriptors now.
    static func now() throws -> OpenDescriptors {
        let tcp = tcpRemotePortsByInode()
        var remotePorts: [Int] = []
        var others = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            // A descriptor closed between the listing and this read is simply not counted.
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)") else { continue }
            if target.hasPrefix("socket:["), let port = tcp[String(target.dropFirst(8).dropLast())] {
                remotePorts.append(port)
            } else {
                others += 1
            }
        }
        return OpenDescriptors(remotePorts: remotePorts, otherThanTCP: others)
    }

    /// How many TCP sockets this process holds to `port`.
    func connections(to port: Int) -> Int { remotePorts.count { $0 == port } }

    /// The remote port of every TCP socket of this network namespace, IPv4 and IPv6, by inode.
    private static func tcpRemotePortsByInode() -> [String: Int] {
        var ports: [String: Int] = [:]
        for row in TCPTable.rows(includingIPv6: true) {
            if let port = row.remotePort { ports[String(row.inode)] = port }
        }
        return ports
    }
}
