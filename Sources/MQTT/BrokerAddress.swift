import Posix

/// A broker address written as `mqtt://host:port` (plain TCP; the port defaults to 1883) or
/// `mqtts://host:port` (TLS; 8883). An IPv6 address is written in brackets, as in a URL:
/// `mqtt://[::1]:1883`.
public struct BrokerAddress: Sendable, Equatable, CustomStringConvertible {
    /// A name or a numeric address; an IPv6 address without its brackets.
    public var host: String
    public var port: Int
    /// `mqtts://`: the connection is TLS, and the broker's certificate must name ``host``.
    public var usesTLS: Bool

    public init(host: String, port: Int, usesTLS: Bool = false) {
        self.host = host
        self.port = port
        self.usesTLS = usesTLS
    }

    /// Parses `mqtt://host[:port]` and `mqtts://host[:port]`; `nil` for any other scheme, an empty
    /// host, a bad port, or an IPv6 address without brackets (whose last group could not be told
    /// from a port).
    public init?(_ text: String) {
        guard let scheme = ["mqtt://", "mqtts://"].first(where: { text.hasPrefix($0) }) else { return nil }
        let usesTLS = scheme == "mqtts://"
        var rest = Substring(text.dropFirst(scheme.count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let host: Substring
        let portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { return nil }
            portText = after.isEmpty ? nil : after.dropFirst()
            guard host.contains(":"), HostResolver.isNumeric(String(host)) else { return nil }
        } else {
            guard rest.filter({ $0 == ":" }).count <= 1 else { return nil }
            if let colon = rest.firstIndex(of: ":") {
                host = rest[..<colon]
                portText = rest[rest.index(after: colon)...]
            } else {
                host = rest
                portText = nil
            }
        }
        var port = usesTLS ? 8883 : 1883
        if let portText {
            guard let parsed = Int(portText), (1...65535).contains(parsed) else { return nil }
            port = parsed
        }
        guard !host.isEmpty, !host.contains("/"), !host.contains("@"), !host.contains("[") else { return nil }
        self.host = String(host)
        self.port = port
        self.usesTLS = usesTLS
    }

    /// A plain `mqtt://` address off loopback: whatever a client sends it, its password first,
    /// crosses the network in the clear.
    public var isPlainOnTheNetwork: Bool { !usesTLS && !HostAddress.isLoopback(host) }

    /// How a client reaches this address over TLS, trusting `caFile` (the system's authorities
    /// without one); `nil` for a plain `mqtt://` address.
    public func tls(caFile: String?) -> MQTTTLS? { usesTLS ? MQTTTLS(caFile: caFile) : nil }

    public var description: String {
        let scheme = usesTLS ? "mqtts" : "mqtt"
        return host.contains(":") ? "\(scheme)://[\(host)]:\(port)" : "\(scheme)://\(host):\(port)"
    }
}
