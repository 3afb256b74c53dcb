import Foundation
import Glibc
import Synchronization

/// An HTTP server of a test's own on 127.0.0.1, for answers the UnlockIT server never gives (a
/// redirect, a proxy's page) or none at all: each connection's request is read and handed to
/// `answer`, whose text is sent back before the connection is closed; for nil it is closed unanswered.
public final class ScriptedHTTPServer: Sendable {
    public let port: Int
    private let fd: Int32
    private let acceptedCount = Atomic<Int>(0)
    private let received = Mutex<[String]>([])
    /// How many connections were accepted.
    public var accepted: Int { acceptedCount.load(ordering: .relaxed) }
    /// The requests read so far, each its head and body. A port is handed out again once freed, so
    /// a connection meant for another test's server that stopped may land here: tests that count
    /// requests count those they can tell as their own.
    public var requests: [String] { received.withLock { $0 } }

    /// `answer` gets the request: its head (the request line and headers) and its body.
    public init(answer: @escaping @Sendable (_ request: String) -> String?) throws {
        let (fd, port) = try Network.listener(backlog: 4)
        (self.fd, self.port) = (fd, port)
        Thread.detachNewThread { [self] in
            while true {
                let client = Glibc.accept(fd, nil, nil)
                guard client >= 0 else { return }
                acceptedCount.add(1, ordering: .relaxed)
                let request = Self.readRequest(client)
                received.withLock { $0.append(request) }
                if let reply = answer(request) {
                    let bytes = Array(reply.utf8)
                    _ = Glibc.send(client, bytes, bytes.count, Int32(MSG_NOSIGNAL))
                }
                close(client)
            }
        }
    }

    /// Reads a request to the end of its body (by its Content-Length), so that closing the
    /// connection unanswered is a clean close, not a reset for bytes left unread.
    private static func readRequest(_ client: Int32) -> String {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let text = String(decoding: received, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = text[..<end.lowerBound].lowercased()
                let length =
                    head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if received.count - text[..<end.upperBound].utf8.count >= length { return text }
            }
            let count = recv(client, &chunk, chunk.count, 0)
            guard count > 0 else { return text }
            received += chunk.prefix(count)
        }
    }

    /// A 200 answer carrying `json`.
    public static func ok(json: String) -> String {
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\nConnection: close\r\n\r\n\(json)"
    }

    public func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}
