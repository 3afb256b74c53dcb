/// Text a peer chose (a lock's message, an identity provider's key id), as it may go into a log
/// line: its first `limit` code points, with everything but printable ASCII (line breaks, terminal
/// escapes, quotes, backslashes) written as `\u{…}`, so that it cannot forge a line of its own or
/// drive the operator's terminal.
public enum PeerText {
    public static func printable(_ text: String, limit: Int = 32) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(limit) {
            if (0x20...0x7E).contains(scalar.value) && scalar != "\"" && scalar != "\\" {
                out.unicodeScalars.append(scalar)
            } else {
                out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
        }
        return out
    }
}
