import Glibc

/// A secret typed at a terminal, edited by the CLI rather than by the terminal's line discipline.
///
/// In its usual (canonical) mode the kernel holds a line in a buffer of 4,095 bytes and drops what
/// comes after, so an ID token of a directory with many groups, pasted at its prompt, arrived cut
/// and was refused as a bad signature. With the line discipline off the CLI takes each byte as it
/// comes and does the editing a person expects: erase, Ctrl-U, Ctrl-W, and Ctrl-D on an empty line.
struct SecretLine {
    enum Step: Equatable {
        /// The line goes on.
        case more
        /// Enter: the line is ``text``.
        case done
        /// Ctrl-D on an empty line: no line at all.
        case endOfInput
    }

    private let erase: UInt8
    private let kill: UInt8
    private let wordErase: UInt8
    private let endOfFile: UInt8
    private(set) var bytes: [UInt8] = []

    /// The editing keys the terminal is set to (its `c_cc`), or the usual ones.
    init(erase: UInt8 = 0x7F, kill: UInt8 = 0x15, wordErase: UInt8 = 0x17, endOfFile: UInt8 = 0x04) {
        (self.erase, self.kill, self.wordErase, self.endOfFile) = (erase, kill, wordErase, endOfFile)
    }

    init(terminal settings: termios) {
        let keys = withUnsafeBytes(of: settings.c_cc) { Array($0) }
        self.init(erase: keys[Int(VERASE)], kill: keys[Int(VKILL)], wordErase: keys[Int(VWERASE)], endOfFile: keys[Int(VEOF)])
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func take(_ byte: UInt8) -> Step {
        switch byte {
        case 0x0A, 0x0D:
            return .done
        case endOfFile:
            // After some text it does nothing: a stray Ctrl-D must not send half a password. (A
            // terminal's own editing passes the text on without ending the line.)
            return bytes.isEmpty ? .endOfInput : .more
        case erase, 0x08, 0x7F:
            // One character, not one byte: a UTF-8 character's continuation bytes go with it.
            while let last = bytes.popLast(), last & 0xC0 == 0x80 {}
        case kill:
            bytes.removeAll()
        case wordErase:
            while bytes.last == 0x20 || bytes.last == 0x09 { bytes.removeLast() }
            while let last = bytes.last, last != 0x20, last != 0x09 { bytes.removeLast() }
        default:
            bytes.append(byte)
        }
        return .more
    }
}
