import Foundation
import Glibc
import SiteHarness

/// A loopback listener whose connections take about a second to be established, relayed to
/// `target` once they are: what a broker across a network looks like to a client's non-blocking
/// connect, which returns before the connection is made. On loopback the connection is made
/// within the connect call, so a client's first write always goes through.
///
/// The listener's queue (backlog 0) is kept full by a connection of the relay's own, so the
/// kernel drops the client's SYN; the queue is emptied after `hold`, and the client's SYN, sent
/// again a second later, gets through. The broker's first answer is held back for `answerDelay`,
/// a broker slow to answer a handshake.
final class SlowConnectRelay: Sendable {
    let port: Int
    private let listener: Int32
    /// Whether the accepting thread closed the listener: until then its descriptor is the relay's to
    /// shut down, and afterwards its number may be another test's.
    private let closed = LockedBox(false)

    init(to target: Int, hold: Duration = .milliseconds(300), answerDelay: Duration = .zero) throws {
        (listener, port) = try Network.listener(backlog: 0)
        guard let filler = Network.connect(port: port) else { throw HarnessError("the relay's own connection failed") }
        let listener = self.listener
        let closed = self.closed
        Thread.detachNewThread {
            Self.sleep(hold)
            // Empties the queue: the dummy connection is taken and closed.
            if let taken = TCPPeer.accept(listener, timeout: .seconds(1)) { close(taken) }
            close(filler)
            while let client = TCPPeer.accept(listener, timeout: .seconds(30)) {
                guard let broker = Network.connect(port: target) else {
                    close(client)
                    continue
                }
                Thread.detachNewThread { Self.relay(client, broker, answerDelay: answerDelay) }
            }
            closed.update { done in
                close(listener)
                done = true
            }
        }
    }

    /// Wakes the accepting thread, which closes the listener: closed here, its descriptor could be
    /// another test's by the time the thread looks again.
    deinit { closed.update { done in if !done { shutdown(listener, Int32(SHUT_RDWR)) } } }

    private static func sleep(_ duration: Duration) {
        Thread.sleep(forTimeInterval: Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    /// Copies bytes both ways until either side closes, then closes both; the second side's first
    /// bytes after `answerDelay`.
    private static func relay(_ first: Int32, _ second: Int32, answerDelay: Duration) {
        var fds = [pollfd(fd: first, events: Int16(POLLIN), revents: 0), pollfd(fd: second, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var answered = false
        loop: while poll(&fds, 2, 60_000) > 0 {
            for (from, to) in [(0, 1), (1, 0)] where fds[from].revents != 0 {
                if from == 1, !answered {
                    answered = true
                    sleep(answerDelay)
                }
                let count = read(fds[from].fd, &buffer, buffer.count)
                guard count > 0, write(fds[to].fd, buffer, count) == count else { break loop }
            }
        }
        close(first)
        close(second)
    }
}
