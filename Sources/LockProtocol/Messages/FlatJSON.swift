/// A strict reader for the protocol's JSON: one object whose values are strings, integers or
/// booleans. It reads RFC 8259 syntax exactly (escapes, surrogate pairs, no trailing commas, no
/// leading zeros), so that what it accepts any JSON parser would; other value kinds (null,
/// fractions, arrays, objects) are read too, so that they can be reported against their field.
///
/// Written for the wire because it runs for every message on both sides: Foundation's
/// `JSONDecoder` was the largest cost of the simulated locks and a large one of the server.
enum FlatJSON {
    enum Value: Equatable {
        case string(String)
        case integer(Int)
        case bool(Bool)
        /// Null, a number that is not an integer (or overflows), an array or an object.
        case other
    }

    struct SyntaxError: Error {}

    /// The object's members in document order. Throws on anything that is not a JSON object.
    static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> [(key: String, value: Value)] {
        try bytes.withUnsafeBufferPointer { buffer throws(SyntaxError) in
            var reader = Reader(bytes: buffer)
            let members = try reader.object()
            reader.skipWhitespace()
            guard reader.position == buffer.count else { throw SyntaxError() }
            return members
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0
        var depth = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func skipWhitespace() {
            while position < bytes.count {
                switch bytes[position] {
                case 0x20, 0x09, 0x0a, 0x0d: position += 1
                default: return
                }
            }
        }

        mutating func expect(_ byte: UInt8) throws(SyntaxError) {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == byte else { throw SyntaxError() }
            position += 1
        }

        mutating func peek() throws(SyntaxError) -> UInt8 {
            skipWhitespace()
            guard position < bytes.count else { throw SyntaxError() }
            return bytes[position]
        }

        mutating func object() throws(SyntaxError) -> [(key: String, value: Value)] {
            try expect(UInt8(ascii: "{"))
            var members: [(key: String, value: Value)] = []
            // Room for every message of the protocol (at most six members), so that the list is
            // allocated once rather than grown member by member.
            members.reserveCapacity(6)
            if try peek() == UInt8(ascii: "}") {
                position += 1
                return members
            }
            while true {
                guard try peek() == UInt8(ascii: "\"") else { throw SyntaxError() }
                let key = try string()
                try expect(UInt8(ascii: ":"))
                members.append((key, try value()))
                switch try peek() {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "}"):
                    position += 1
                    return members
                default: throw SyntaxError()
                }
            }
        }

        mutating func value() throws(SyntaxError) -> Value {
            switch try peek() {
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .other
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return try number()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                try skipContainer()
                return .other
            default:
                throw SyntaxError()
            }
        }

        mutating func literal(_ word: StaticString) throws(SyntaxError) {
            let count = word.utf8CodeUnitCount
            guard position + count <= bytes.count else { throw SyntaxError() }
            for index in 0..<count where bytes[position + index] != word.utf8Start[index] { throw SyntaxError() }
            position += count
        }

        mutating func number() throws(SyntaxError) -> Value {
            let start = position
            var negative = false
            if bytes[position] == UInt8(ascii: "-") {
                negative = true
                position += 1
            }
            let digitsStart = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            let digits = position - digitsStart
            guard digits > 0, !(digits > 1 && bytes[digitsStart] == UInt8(ascii: "0")) else { throw SyntaxError() }
            var integral = true
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                integral = false
                position += 1
                let fraction = position
                while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
                guard position > fraction else { throw SyntaxError() }
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
                integral = false
                position += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
                let exponent = position
                while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
                guard position > exponent else { throw SyntaxError() }
            }
            guard integral, digits <= 18 else {
                // Beyond a double's range (1e999) Foundation refuses the document; so does this reader,
                // so that what it accepts every parser takes.
                guard let value = Double(String(decoding: bytes[start..<position], as: UTF8.self)), value.isFinite else { throw SyntaxError() }
                return .other
            }
            var value = 0
            for index in digitsStart..<(digitsStart + digits) { value = value * 10 + Int(bytes[index] - UInt8(ascii: "0")) }
            return .integer(negative ? -value : value)
        }

        mutating func string() throws(SyntaxError) -> String {
            try expect(UInt8(ascii: "\""))
            let start = position
            var scalars = String.UnicodeScalarView()
            var runStart = position
            func flushRun(_ end: Int, into scalars: inout String.UnicodeScalarView) throws(SyntaxError) {
                guard end > runStart else { return }
                // Unescaped text must be valid UTF-8.
                guard let text = Self.text(UnsafeBufferPointer(rebasing: bytes[runStart..<end])) else { throw SyntaxError() }
                scalars.append(contentsOf: text.unicodeScalars)
            }
            while position < bytes.count {
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "\""):
                    if runStart == start {
                        // No escapes (every string the protocol sends): the bytes are the string.
                        guard let text = Self.text(UnsafeBufferPointer(rebasing: bytes[start..<position])) else { throw SyntaxError() }
                        position += 1
                        return text
                    }
                    try flushRun(position, into: &scalars)
                    position += 1
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    try flushRun(position, into: &scalars)
                    position += 1
                    guard position < bytes.count else { throw SyntaxError() }
                    let escape = bytes[position]
                    position += 1
                    switch escape {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"): scalars.append(try unicodeEscape())
                    default: throw SyntaxError()
                    }
                    runStart = position
                case 0x00..<0x20:
                    throw SyntaxError()
                default:
                    position += 1
                }
            }
            throw SyntaxError()
        }

        /// `run` as a string if it is well-formed UTF-8, else `nil`, as `String(validating:as:)`
        /// answers. That initialiser is generic and not inlined, so each call looks its argument
        /// types' metadata up at run time: ≈ 940 instructions under callgrind for strings of a few
        /// bytes, and a message has up to ten (keys and values). Every string the protocol sends is
        /// ASCII, which is well-formed UTF-8 as it stands, and `String(decoding:as:)` on a buffer takes
        /// the standard library's concrete path.
        static func text(_ run: UnsafeBufferPointer<UInt8>) -> String? {
            var ascii = true
            for byte in run where byte >= 0x80 {
                ascii = false
                break
            }
            return ascii ? String(decoding: run, as: UTF8.self) : String(validating: run, as: UTF8.self)
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard position + 4 <= bytes.count else { throw SyntaxError() }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[position]
                position += 1
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw SyntaxError()
                }
                value = value << 4 | digit
            }
            return value
        }

        mutating func unicodeEscape() throws(SyntaxError) -> Unicode.Scalar {
            let first = try hex4()
            if (0xD800...0xDBFF).contains(first) {
                guard position + 2 <= bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                    throw SyntaxError()
                }
                position += 2
                let second = try hex4()
                guard (0xDC00...0xDFFF).contains(second) else { throw SyntaxError() }
                guard let scalar = Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)) else { throw SyntaxError() }
                return scalar
            }
            guard let scalar = Unicode.Scalar(first) else { throw SyntaxError() }
            return scalar
        }

        /// Reads (and discards) an array or object, checking its syntax.
        mutating func skipContainer() throws(SyntaxError) {
            depth += 1
            defer { depth -= 1 }
            guard depth <= 32 else { throw SyntaxError() }
            if try peek() == UInt8(ascii: "{") {
                _ = try object()
                return
            }
            try expect(UInt8(ascii: "["))
            if try peek() == UInt8(ascii: "]") {
                position += 1
                return
            }
            while true {
                _ = try value()
                switch try peek() {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "]"):
                    position += 1
                    return
                default: throw SyntaxError()
                }
            }
        }
    }
}
