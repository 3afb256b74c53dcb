/// How a client checks the broker it reaches over TLS (`mqtts://`).
///
/// The connection is refused unless the broker presents a certificate that chains to ``caFile``
/// (or, without one, to the system's trusted authorities) and names ``serverName``. TLS 1.2 is
/// the lowest version offered.
public struct MQTTTLS: Sendable, Equatable {
    /// A PEM file of the authorities to trust for the broker's certificate; `nil` for the system's.
    public var caFile: String?
    /// The host name or IP address the broker's certificate must carry; `nil` for the host the
    /// client connects to. The event loop connects to a numeric address it looked up itself, so
    /// the name is checked here, against the name the client was given, not against that address.
    public var serverName: String?

    public init(caFile: String? = nil, serverName: String? = nil) {
        self.caFile = caFile
        self.serverName = serverName
    }
}
