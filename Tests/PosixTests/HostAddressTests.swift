import Posix
import Testing

@Suite struct HostAddressTests {
    /// The CLI's plain-HTTP servers and broker-setup's plain listeners are held to it.
    @Test func loopbackIsThisMachineOnly() {
        for host in ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]"] { #expect(HostAddress.isLoopback(host), "\(host)") }
        for host in [
            "doors.example.com", "10.0.0.1", "128.0.0.1", "127.0.0.1.example.com", "127.0.0", "localhost.example.com", "::2", "0.0.0.0",
            "192.168.1.10", "broker.example.com", "::", "127.0.0.256", "127.0.0.01", "[::1", "",
        ] {
            #expect(!HostAddress.isLoopback(host), "\(host)")
        }
    }
}
