import Foundation

/// The rules for what users type. Each returns the normalised value, or `nil` when it is not acceptable.
public enum Validation {
    /// Security levels run from 0 (none) to this.
    public static let maximumLevel = 1_000_000
    public static let passwordLength = 12...128

    /// Lowercased, trimmed and in Unicode's canonical composed form (NFC), so that an address is one
    /// address whether `é` was typed as one code point or as `e` and a combining accent;
    /// `local@domain.tld`, at most 254 bytes; no spaces and no control, format or invisible
    /// characters (a zero-width space or a right-to-left override would make twins that look alike).
    public static func email(_ text: String) -> String? {
        let email = text.trimmingWhitespace().lowercased().precomposedStringWithCanonicalMapping
        guard (3...254).contains(email.utf8.count) else { return nil }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64 else { return nil }
        let domain = parts[1]
        guard domain.contains("."), !domain.hasPrefix("."), !domain.hasSuffix("."), !domain.contains("..") else { return nil }
        guard email.unicodeScalars.allSatisfy(\.mayBeInAnEmail) else { return nil }
        return email
    }

    /// 1…`maximum` characters, then trimmed; at least one that is not a space, no control characters
    /// and no invisible formatting (see ``isHiddenFormatting``). Characters are code points as sent,
    /// the spaces trimmed among them, as the API document's `minLength` and `maxLength` count them: a
    /// letter with a combining accent is two, and a letter with a thousand combining marks is not a
    /// short name.
    public static func name(_ text: String, maximum: Int = 100) -> String? {
        guard (1...maximum).contains(text.unicodeScalars.count),
            !text.unicodeScalars.contains(where: { $0.isControl || $0.isHiddenFormatting })
        else { return nil }
        let name = text.trimmingWhitespace()
        return name.isEmpty ? nil : name
    }

    /// At most `maximum` characters (code points, as for ``name(_:maximum:)``); line breaks and tabs
    /// allowed, other control characters and invisible formatting not.
    public static func description(_ text: String, maximum: Int = 1000) -> String? {
        guard text.unicodeScalars.count <= maximum,
            !text.unicodeScalars.contains(where: { ($0.isControl && $0 != "\n" && $0 != "\t") || $0.isHiddenFormatting })
        else { return nil }
        return text
    }

    public static func level(_ value: Int) -> Int? {
        (0...maximumLevel).contains(value) ? value : nil
    }

    /// 12 to 128 characters, each Unicode code point counted as one (as NIST SP 800-63B counts them,
    /// and as the API document's `minLength`/`maxLength` do): `é` typed as e and a combining accent is
    /// two. Anything else, including spaces, is allowed, length being what makes a password strong,
    /// except what is guessed first whatever its length (``PasswordPatterns``): a repeated piece, a
    /// run along the alphabet or a keyboard, or the service's name or `context` (the user's email and
    /// name) with digits or punctuation around it.
    public static func password(_ text: String, context: [String] = []) -> Bool {
        passwordLength.contains(text.unicodeScalars.count) && !text.unicodeScalars.contains(where: \.isControl)
            && !PasswordPatterns.isGuessable(text, context: context)
    }
}

extension Unicode.Scalar {
    fileprivate var isControl: Bool { properties.generalCategory == .control }

    /// Formatting no one sees: bidi overrides and isolates (U+202E can turn `Lab` into a name shown
    /// backwards in a table), zero-width spaces, soft hyphens, line and paragraph separators. The
    /// joiners U+200C and U+200D stay: Persian and Indic names and emoji sequences need them.
    fileprivate var isHiddenFormatting: Bool {
        switch properties.generalCategory {
        case .format: value != 0x200C && value != 0x200D
        case .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }

    fileprivate var mayBeInAnEmail: Bool {
        guard value > 0x20, value != 0x7f, self != ",", self != ";", !properties.isDefaultIgnorableCodePoint else { return false }
        switch properties.generalCategory {
        case .control, .format, .spaceSeparator, .lineSeparator, .paragraphSeparator, .unassigned, .privateUse, .surrogate: return false
        default: return true
        }
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        var scalars = Substring(self).unicodeScalars
        while let first = scalars.first, first.properties.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.properties.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
