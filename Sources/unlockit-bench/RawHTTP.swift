import Foundation
import Glibc

/// A keep-alive HTTP/1.1 connection over a blocking socket: the load generator's client. Each
/// worker thread owns one, as wrk does, so that the generator spends as little CPU (and adds as
/// little latency) as possible next to the system it measures.
final class RawHTTPConnection {
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 65536)
    private var buffered = 0

    struct Failure: Error {}

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure() }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure()
        }
    }

    deinit { close(fd) }

    /// The bytes of `METHOD path` with a bearer token and an optional JSON body.
    static func request(_ method: String, _ path: String, token: String?, json: String? = nil) -> [UInt8] {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if let token { text += "Authorization: Bearer \(token)\r\n" }
        if let json {
            text += "Content-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)"
        } else {
            text += "Content-Length: 0\r\n\r\n"
        }
        return Array(text.utf8)
    }

    /// Sends a request and waits for its response; returns the status code.
    func send(_ request: [UInt8]) throws -> Int {
        var offset = 0
        while offset < request.count {
            let written = request[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { throw Failure() }
            offset += written
        }
        return try readResponse()
    }

    /// Reads one response (head and Content-Length body); returns its status code.
    private func readResponse() throws -> Int {
        while true {
            if let end = headerEnd() {
                let head = String(decoding: buffer[0..<end], as: UTF8.self)
                let status = Int(head.dropFirst(9).prefix(3)) ?? 0
                var length = 0
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0
                }
                let total = end + 4 + length
                while buffered < total { try fill() }
                // Keep whatever follows (nothing, without pipelining) at the front.
                buffer.withUnsafeMutableBufferPointer { bytes in
                    for index in 0..<(buffered - total) { bytes[index] = bytes[total + index] }
                }
                buffered -= total
                return status
            }
            try fill()
        }
    }

    private func headerEnd() -> Int? {
        guard buffered >= 4 else { return nil }
        for index in 0...(buffered - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index
        }
        return nil
    }

    private func fill() throws {
        if buffered == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }
        let count = buffer[buffered...].withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { throw Failure() }
        buffered += count
    }
}

/// Runs `body` on `count` threads and waits for all of them.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            body(index)
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
}
