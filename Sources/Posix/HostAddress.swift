/// What a host name or address says of where it is.
public enum HostAddress {
    /// Whether `host` is reached from this machine only: `localhost`, an address in 127.0.0.0/8
    /// written in plain dotted decimal, or `::1`, in brackets or not (as a URL writes it). Anything
    /// else, a name that only starts like one of these included, is not.
    public static func isLoopback(_ host: String) -> Bool {
        var bare = Substring(host.lowercased())
        if bare.hasPrefix("["), bare.hasSuffix("]") { bare = bare.dropFirst().dropLast() }
        if bare == "localhost" || bare == "::1" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { octet in UInt8(octet).map { String($0) == octet } ?? false }
    }
}
