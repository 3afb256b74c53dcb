import NIOCore

extension ByteBuffer {
    /// Writes `string` as a JSON string the way `APIJSON.encoder` does: in quotes, with a backslash
    /// before a quote or a backslash, the short escapes for backspace, form feed, newline, carriage
    /// return and tab, `\u00XX` for the other control characters, and everything else (`/`
    /// too) as its UTF-8. (The lock protocol's `WireFormat.Writer` writes every control character
    /// as `\u00XX`: valid JSON too, but not the bytes of the API's other answers.)
    mutating func writeJSONString(_ string: String) {
        writeInteger(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): writeStaticString("\\\"")
            case UInt8(ascii: "\\"): writeStaticString("\\\\")
            case 0x08: writeStaticString("\\b")
            case 0x0C: writeStaticString("\\f")
            case UInt8(ascii: "\n"): writeStaticString("\\n")
            case UInt8(ascii: "\r"): writeStaticString("\\r")
            case UInt8(ascii: "\t"): writeStaticString("\\t")
            case 0..<0x20:
                writeStaticString("\\u00")
                writeInteger(hexDigits[Int(byte >> 4)])
                writeInteger(hexDigits[Int(byte & 0xF)])
            default: writeInteger(byte)
            }
        }
        writeInteger(UInt8(ascii: "\""))
    }
}

private let hexDigits = Array("0123456789abcdef".utf8)
