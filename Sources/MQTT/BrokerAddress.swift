/// A broker address written as `mqtt://host:port` (the port defaults to 1883).
public struct BrokerAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `mqtt://host[:port]`; `nil` for any other scheme, an empty host or a bad port.
    public init?(_ text: String) {
        let prefix = "mqtt://"
        guard text.hasPrefix(prefix) else { return nil }
        var rest = Substring(text.dropFirst(prefix.count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let host: Substring
        var port = 1883
        if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            guard let parsed = Int(rest[rest.index(after: colon)...]), (1...65535).contains(parsed) else { return nil }
            port = parsed
        } else {
            host = rest
        }
        guard !host.isEmpty, !host.contains("/"), !host.contains("@") else { return nil }
        self.host = String(host)
        self.port = port
    }

    public var description: String { "mqtt://\(host):\(port)" }
}
