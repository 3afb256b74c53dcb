import Foundation

/// The kernel's table of this network namespace's TCP sockets, `/proc/net/tcp` and, when asked,
/// `/proc/net/tcp6`.
enum TCPTable {
    /// One socket: its addresses as the kernel writes them (`hex address:hex port`, 127.0.0.1 as
    /// `0100007F`) and its inode, which `/proc/self/fd` names as `socket:[inode]`.
    struct Row {
        let local: Substring
        let remote: Substring
        let inode: Substring

        /// The port at the other end.
        var remotePort: Int? { remote.split(separator: ":").last.flatMap { Int($0, radix: 16) } }
    }

    static func rows(includingIPv6: Bool = false) -> [Row] {
        (includingIPv6 ? ["/proc/net/tcp", "/proc/net/tcp6"] : ["/proc/net/tcp"]).flatMap { path -> [Row] in
            // Read to the end: the kernel reports a size of 0 for these files.
            guard let file = FileHandle(forReadingAtPath: path) else { return [] }
            defer { try? file.close() }
            let table = String(decoding: (try? file.readToEnd()) ?? Data(), as: UTF8.self)
            // `sl local_address rem_address st … inode`, after a line of headings.
            return table.split(separator: "\n").dropFirst().compactMap { line in
                let fields = line.split(separator: " ")
                return fields.count > 9 ? Row(local: fields[1], remote: fields[2], inode: fields[9]) : nil
            }
        }
    }
}
