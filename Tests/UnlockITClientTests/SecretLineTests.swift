import Testing

@testable import UnlockITClient

/// The line editing of a secret prompt, which the CLI does itself (the terminal's own is off).
@Suite struct SecretLineTests {
    /// The line `typed` makes, and the step its last byte ended on.
    static func type(_ typed: [UInt8]) -> (text: String, step: SecretLine.Step) {
        var line = SecretLine()
        var step = SecretLine.Step.more
        for byte in typed {
            step = line.take(byte)
            if step != .more { break }
        }
        return (line.text, step)
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test("Enter ends the line, as a newline or a carriage return, and what follows is not taken")
    func enterEndsTheLine() {
        #expect(Self.type(Self.bytes("hunter2\n")) == ("hunter2", .done))
        #expect(Self.type(Self.bytes("hunter2\rmore")) == ("hunter2", .done))
        #expect(Self.type(Self.bytes("\n")) == ("", .done))
    }

    @Test("A line longer than the terminal's own buffer of 4,095 bytes is taken whole")
    func aLongLineIsWhole() {
        let token = String(repeating: "eyJhbGciOiJSUzI1NiJ9", count: 500)
        #expect(token.utf8.count == 10_000)
        #expect(Self.type(Self.bytes(token + "\n")) == (token, .done))
    }

    @Test("Erase takes back one character, a whole UTF-8 one, and nothing before the start")
    func eraseTakesOneCharacter() {
        #expect(Self.type(Self.bytes("hunter3") + [0x7F] + Self.bytes("2\n")) == ("hunter2", .done))
        #expect(Self.type(Self.bytes("pass") + [0x08, 0x08] + Self.bytes("ss\n")) == ("pass", .done))
        #expect(Self.type(Self.bytes("blåbær") + [0x7F, 0x7F] + Self.bytes("r\n")) == ("blåbr", .done))
        #expect(Self.type([0x7F, 0x7F] + Self.bytes("a\n")) == ("a", .done))
    }

    @Test("Ctrl-U clears the line; Ctrl-W takes back the last word and the spaces after it")
    func killAndWordErase() {
        #expect(Self.type(Self.bytes("wrong") + [0x15] + Self.bytes("right\n")) == ("right", .done))
        #expect(Self.type(Self.bytes("correct horse  ") + [0x17] + Self.bytes("battery\n")) == ("correct battery", .done))
        #expect(Self.type(Self.bytes("one") + [0x17, 0x17] + Self.bytes("two\n")) == ("two", .done))
    }

    @Test("Ctrl-D on an empty line is the end of input; after some text it does nothing, and sends no half secret")
    func endOfFile() {
        #expect(Self.type([0x04]) == ("", .endOfInput))
        #expect(Self.type(Self.bytes("abc") + [0x15, 0x04]) == ("", .endOfInput))
        #expect(Self.type(Self.bytes("abc") + [0x04]) == ("abc", .more))
        #expect(Self.type(Self.bytes("abc") + [0x04, 0x04] + Self.bytes("def\n")) == ("abcdef", .done))
    }

    @Test("The terminal's own editing keys are the ones taken")
    func theTerminalsKeys() {
        var line = SecretLine(erase: 0x23, kill: 0x40, wordErase: 0x17, endOfFile: 0x1A)
        for byte in Self.bytes("abX#c") { _ = line.take(byte) }
        #expect(line.text == "abc")
        for byte in Self.bytes("zz@y") { _ = line.take(byte) }
        #expect(line.text == "y")
        #expect(line.take(0x1A) == .more)
        #expect(line.take(0x0A) == .done)
        var empty = SecretLine(erase: 0x23, kill: 0x40, wordErase: 0x17, endOfFile: 0x1A)
        #expect(empty.take(0x1A) == .endOfInput)
        // 0x04 is no end of input on this terminal: it is taken as typed.
        #expect(empty.take(0x04) == .more)
        #expect(empty.bytes == [0x04])
    }
}
