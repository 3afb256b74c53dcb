import Glibc
import Posix
import Testing

@Suite struct LoopbackSocketTests {
    private func tcpSocket() -> Int32 { socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }

    @Test func boundListenedConnectedAndBothEndsPortsRead() throws {
        let listener = tcpSocket()
        defer { close(listener) }
        let port = try #require(LoopbackSocket.bind(listener))
        #expect(port > 0)
        #expect(LoopbackSocket.localPort(of: listener) == port)
        #expect(listen(listener, 1) == 0)

        let client = tcpSocket()
        defer { close(client) }
        #expect(LoopbackSocket.connect(client, port: port))
        let accepted = accept(listener, nil, nil)
        #expect(accepted >= 0)
        defer { close(accepted) }
        #expect(LoopbackSocket.localPort(of: accepted) == port)
        let clientPort = try #require(LoopbackSocket.localPort(of: client))
        #expect(LoopbackSocket.peerPort(of: accepted) == clientPort)
        #expect(LoopbackSocket.peerPort(of: client) == port)
    }

    @Test func aPortNothingListensOnRefusesTheConnection() throws {
        // Bound but not listening: the kernel refuses connections to it, and no other process can take it meanwhile.
        let bound = tcpSocket()
        defer { close(bound) }
        let port = try #require(LoopbackSocket.bind(bound))
        let client = tcpSocket()
        defer { close(client) }
        #expect(!LoopbackSocket.connect(client, port: port))
    }

    @Test("A port outside 0–65535 is refused, not a crash")
    func anImpossiblePortIsRefused() {
        let socket = tcpSocket()
        defer { close(socket) }
        for port in [-1, 65_536, Int.max] {
            #expect(LoopbackSocket.bind(socket, port: port) == nil)
            #expect(!LoopbackSocket.connect(socket, port: port))
        }
    }

    @Test func aSocketThatIsNotIPv4HasNoPort() {
        var ends: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer { ends.forEach { close($0) } }
        #expect(LoopbackSocket.localPort(of: ends[0]) == nil)
        #expect(LoopbackSocket.peerPort(of: ends[0]) == nil)
        #expect(LoopbackSocket.localPort(of: -1) == nil)
    }
}
