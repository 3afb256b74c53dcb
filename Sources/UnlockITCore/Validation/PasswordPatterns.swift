import Foundation

/// Passwords long enough that are still among the first anyone guesses (NIST SP 800-63B §5.1.1.2:
/// "repetitive or sequential characters", and "context-specific words, such as the name of the
/// service, the username, and derivatives thereof"):
/// - one short piece repeated: `aaaaaaaaaaaa`, `abcabcabcabc`, `passwordpassword`;
/// - a run along the alphabet, the digits or a keyboard row, either way: `abcdefghijkl`,
///   `123456789012`, `qwertyuiopas`, `lkjhgfdsapoi`;
/// - the words of its context with only digits, spaces or punctuation added: the service's name
///   (`Unlockit2026!`), the user's email (`ann.hansen@acme.example`) or name (`Hansen 1985!!!`).
///
/// Checked on the password as it is hashed (NFKC), ignoring case. A list of breached passwords is
/// not part of it: the server has none to compare with.
public enum PasswordPatterns {
    /// The service's own name, which every password check takes as context.
    public static let serviceName = "unlockit"

    /// Runs a password must not be a piece of, read either way; each wraps around (`…89012…`).
    private static let runs = [
        "abcdefghijklmnopqrstuvwxyz", "0123456789", "qwertyuiopasdfghjklzxcvbnm", "qwertzuiopasdfghjklyxcvbnm", "azertyuiopqsdfghjklmwxcvbn",
    ]

    /// Whether `password` is one of the patterns above, `context` being the words of its user (their
    /// email and name) besides the service's name.
    public static func isGuessable(_ password: String, context: [String]) -> Bool {
        let text = Array(password.precomposedStringWithCompatibilityMapping.lowercased().unicodeScalars)
        return isRepetition(text) || isRun(text) || isContextWord(text, context: context + [serviceName])
    }

    /// `text` is a piece of at most half its length, repeated (the last copy may be cut short).
    static func isRepetition(_ text: [Unicode.Scalar]) -> Bool {
        guard text.count >= 2 else { return false }
        return (1...(text.count / 2)).contains { period in
            text.indices.dropFirst(period).allSatisfy { text[$0] == text[$0 - period] }
        }
    }

    /// `text` is a piece of one of ``runs``, forwards or backwards, going round it as often as it takes.
    static func isRun(_ text: [Unicode.Scalar]) -> Bool {
        let word = String(String.UnicodeScalarView(text))
        return runs.contains { run in
            let laps = text.count / run.count + 2
            let round = String(repeating: run, count: laps)
            return round.contains(word) || String(round.reversed()).contains(word)
        }
    }

    /// What is left of `text` once digits, spaces and punctuation are gone is one of the context's
    /// words, or all of one of its entries run together (`annhansen` for "Ann Hansen").
    static func isContextWord(_ text: [Unicode.Scalar], context: [String]) -> Bool {
        let letters = self.letters(text)
        guard !letters.isEmpty else { return false }
        return context.contains { entry in
            let entry = Array(entry.precomposedStringWithCompatibilityMapping.lowercased().unicodeScalars)
            let words = entry.split { !$0.properties.isAlphabetic }.map(Array.init)
            return self.letters(entry) == letters || words.contains(letters)
        }
    }

    private static func letters(_ text: [Unicode.Scalar]) -> [Unicode.Scalar] {
        text.filter(\.properties.isAlphabetic)
    }
}
