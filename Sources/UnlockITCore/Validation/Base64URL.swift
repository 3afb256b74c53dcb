/// The base64url alphabet (RFC 4648, section 5), in which session tokens and the lock protocol's
/// request ids are written.
public enum Base64URL {
    /// Whether `byte` is one of the alphabet's 64 characters: `A`–`Z`, `a`–`z`, `0`–`9`, `-` and `_`
    /// (padding, `=`, is not). Inlinable: the checks that call it run on every request and message.
    @inlinable
    public static func isAlphabet(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }
}
