import Foundation
import HTTPTypes
import NIOCore

/// The client a request comes from, as the per-client sign-in limit counts clients, and its network,
/// as bcrypt's queue shares its places.
///
/// The connection's peer, unless the peer is one of the configured trusted proxies: then the
/// rightmost `X-Forwarded-For` entry that is not a trusted proxy (entries further left are the
/// client's own say and could be anything). IPv4 addresses count one by one; IPv6 addresses by
/// their /64, the smallest block a site is given, so that one host cannot become 2⁶⁴ clients.
enum ClientAddress {
    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!

    static func key(peer: SocketAddress?, forwardedFor: String?, trustedProxies: Set<String>) -> String {
        guard var client = peer else { return "unknown" }
        if let forwardedFor, !trustedProxies.isEmpty, trustedProxies.contains(canonical(client)) {
            for hop in forwardedFor.split(separator: ",").reversed() {
                // A hop that is not an address was not written by a proxy of ours: stop at the last one that was.
                guard let address = try? SocketAddress(ipAddress: hop.trimmingCharacters(in: .whitespaces), port: 0) else { break }
                client = address
                if !trustedProxies.contains(canonical(address)) { break }
            }
        }
        return bucket(client)
    }

    /// The network a client key (``key(peer:forwardedFor:trustedProxies:)``) belongs to, as bcrypt's
    /// queue shares its places (``AsyncLimiter``): an IPv4 address's /24, an IPv6 /64's /48 (a
    /// site's usual allocation, so that one site's 65,536 /64s share one network's turns). Anything
    /// else is its own network.
    static func network(of key: String) -> String {
        if key.hasSuffix("::/64") {
            let groups = key.dropLast(5).split(separator: ":", omittingEmptySubsequences: false)
            guard groups.count == 4 else { return key }
            return groups.prefix(3).joined(separator: ":") + "::/48"
        }
        let octets = key.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) else { return key }
        return octets.prefix(3).joined(separator: ".") + ".0/24"
    }

    /// The address as text (an IPv4-mapped IPv6 address as IPv4); `nil` if `text` is not an IP address.
    static func canonical(_ text: String) -> String? {
        (try? SocketAddress(ipAddress: text, port: 0)).map(canonical)
    }

    static func canonical(_ address: SocketAddress) -> String {
        if let mapped = mappedIPv4(address) { return mapped }
        return address.ipAddress ?? "unknown"
    }

    private static func bucket(_ address: SocketAddress) -> String {
        guard case .v6(let v6) = address, mappedIPv4(address) == nil else { return canonical(address) }
        let bytes = addressBytes(v6)
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    /// The 16 bytes of an IPv6 address, read from its `sockaddr_in6` by position (family, port and
    /// flow label come first, 8 bytes on Linux and the BSDs alike). Not through `sin6_addr`: which
    /// module that member belongs to (Glibc's or NIO's own C module, which both declare the struct)
    /// depends on the order the compiler loads them in, and a clean build can then refuse the name.
    private static func addressBytes(_ v6: SocketAddress.IPv6Address) -> [UInt8] {
        withUnsafeBytes(of: v6.address) { Array($0[8..<24]) }
    }

    private static func mappedIPv4(_ address: SocketAddress) -> String? {
        guard case .v6(let v6) = address else { return nil }
        let bytes = addressBytes(v6)
        guard bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff else { return nil }
        return bytes[12...].map(String.init).joined(separator: ".")
    }
}
