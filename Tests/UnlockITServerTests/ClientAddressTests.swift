import NIOCore
import Testing

@testable import UnlockITServer

@Suite struct ClientAddressTests {
    func peer(_ ip: String) throws -> SocketAddress { try SocketAddress(ipAddress: ip, port: 40000) }

    @Test func aDirectClientIsItsAddressAndIPv6CountsBySlash64() throws {
        #expect(ClientAddress.key(peer: try peer("198.51.100.7"), forwardedFor: nil, trustedProxies: []) == "198.51.100.7")
        #expect(ClientAddress.key(peer: try peer("2001:db8:a:b:1::1"), forwardedFor: nil, trustedProxies: []) == "2001:db8:a:b::/64")
        #expect(ClientAddress.key(peer: try peer("2001:db8:a:b:ffff::2"), forwardedFor: nil, trustedProxies: []) == "2001:db8:a:b::/64")
        #expect(ClientAddress.key(peer: try peer("::ffff:198.51.100.7"), forwardedFor: nil, trustedProxies: []) == "198.51.100.7")
        #expect(ClientAddress.key(peer: nil, forwardedFor: nil, trustedProxies: []) == "unknown")
    }

    @Test func forwardedForCountsOnlyFromATrustedProxy() throws {
        let proxies: Set<String> = ["10.0.0.1", "10.0.0.2"]
        // Not from a proxy: the header is the client's own say.
        #expect(ClientAddress.key(peer: try peer("198.51.100.7"), forwardedFor: "203.0.113.9", trustedProxies: proxies) == "198.51.100.7")
        // From a proxy: the rightmost entry that is not a proxy; what the client wrote further left is ignored.
        #expect(
            ClientAddress.key(peer: try peer("10.0.0.1"), forwardedFor: "192.0.2.1, 203.0.113.9, 10.0.0.2", trustedProxies: proxies)
                == "203.0.113.9")
        #expect(ClientAddress.key(peer: try peer("::ffff:10.0.0.1"), forwardedFor: "203.0.113.9", trustedProxies: proxies) == "203.0.113.9")
        // No header, or an entry that is not an address: the last address a proxy of ours vouched for.
        #expect(ClientAddress.key(peer: try peer("10.0.0.1"), forwardedFor: nil, trustedProxies: proxies) == "10.0.0.1")
        #expect(ClientAddress.key(peer: try peer("10.0.0.1"), forwardedFor: "203.0.113.9, junk", trustedProxies: proxies) == "10.0.0.1")
    }

    @Test func bcryptsQueueIsSharedByIPv4Slash24AndIPv6Slash48() {
        #expect(ClientAddress.network(of: "198.51.100.7") == "198.51.100.0/24")
        #expect(ClientAddress.network(of: "2001:db8:a:b::/64") == "2001:db8:a::/48")
        #expect(ClientAddress.network(of: "2001:db8:a:ffff::/64") == "2001:db8:a::/48")
        #expect(ClientAddress.network(of: "0:0:0:0::/64") == "0:0:0::/48")
        #expect(ClientAddress.network(of: "unknown") == "unknown")
        #expect(ClientAddress.network(of: PasswordHasher.localClient) == PasswordHasher.localClient)
        #expect(ClientAddress.network(of: "1.2.3.456") == "1.2.3.456")
    }

    @Test func trustedProxiesMustBeAddresses() {
        #expect(ClientAddress.canonical("10.0.0.1") == "10.0.0.1")
        #expect(ClientAddress.canonical("::ffff:10.0.0.1") == "10.0.0.1")
        #expect(ClientAddress.canonical("proxy.example") == nil)
    }
}
