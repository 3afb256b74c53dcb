/// A broker address written as `mqtt://host:port` (the port defaults to 1883). An IPv6 address is
/// written in brackets, as in a URL: `mqtt://[::1]:1883`.
public struct BrokerAddress: Sendable, Equatable, CustomStringConvertible {
    /// A name or a numeric address; an IPv6 address without its brackets.
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `mqtt://host[:port]`; `nil` for any other scheme, an empty host, a bad port, or an
    /// IPv6 address without brackets (whose last group could not be told from a port).
    public init?(_ text: String) {
        let prefix = "mqtt://"
        guard text.hasPrefix(prefix) else { return nil }
        var rest = Substring(text.dropFirst(prefix.count))
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
        var port = 1883
        if let portText {
            guard let parsed = Int(portText), (1...65535).contains(parsed) else { return nil }
            port = parsed
        }
        guard !host.isEmpty, !host.contains("/"), !host.contains("@"), !host.contains("[") else { return nil }
        self.host = String(host)
        self.port = port
    }

    public var description: String { host.contains(":") ? "mqtt://[\(host)]:\(port)" : "mqtt://\(host):\(port)" }
}
