import NIOCore
import Testing

@testable import UnlockITServer

@Suite struct HTTPConnectionLimitsTests {
    @Test("A client holds at most its share of connections; others, and a trusted proxy, are not held back")
    func connectionsAreCountedPerClient() throws {
        let limits = HTTPConnectionLimits(perClient: 2, total: 100, requestTimeout: .seconds(60), trustedProxies: ["10.0.0.1"])
        let first = try #require(limits.admit(peer: try peer("192.0.2.7")))
        #expect(limits.admit(peer: try peer("192.0.2.7")) != nil)
        #expect(limits.admit(peer: try peer("192.0.2.7")) == nil)
        // The next address is another client; an IPv6 host's /64 is one.
        #expect(limits.admit(peer: try peer("192.0.2.8")) != nil)
        #expect(limits.admit(peer: try peer("2001:db8:1:2::a")) != nil)
        #expect(limits.admit(peer: try peer("2001:db8:1:2::b")) != nil)
        #expect(limits.admit(peer: try peer("2001:db8:1:2:ffff::c")) == nil)
        // A proxy carries many clients: not counted.
        for _ in 0..<10 { #expect(limits.admit(peer: try peer("10.0.0.1")) == "") }
        // A connection closed gives its place back.
        limits.release(first)
        #expect(limits.held(by: first) == 1)
        #expect(limits.admit(peer: try peer("192.0.2.7")) != nil)
    }

    @Test("All clients together, a trusted proxy's connections too, hold at most the listener's total")
    func connectionsAreCountedInAll() throws {
        let limits = HTTPConnectionLimits(perClient: 2, total: 5, requestTimeout: .seconds(60), trustedProxies: ["10.0.0.1"])
        // One IPv6 site has many /64s, each a client of its own: together they reach the total.
        let admitted = try (0..<5).map { try #require(limits.admit(peer: try peer("2001:db8:1:\($0)::a"))) }
        #expect(limits.held == 5)
        #expect(limits.admit(peer: try peer("2001:db8:1:99::a")) == nil)
        #expect(limits.admit(peer: try peer("192.0.2.7")) == nil)
        #expect(limits.admit(peer: try peer("10.0.0.1")) == nil)
        // A place given back is anyone's, a proxy's too, and the proxy's counts until it closes.
        limits.release(admitted[0])
        #expect(limits.admit(peer: try peer("10.0.0.1")) == "")
        #expect(limits.admit(peer: try peer("192.0.2.7")) == nil)
        limits.release("")
        #expect(limits.admit(peer: try peer("192.0.2.7")) != nil)
        #expect(limits.held == 5 && limits.held(by: admitted[1]) == 1)
    }

    func peer(_ ip: String) throws -> SocketAddress { try SocketAddress(ipAddress: ip, port: 40_000) }
}
