import Foundation

/// When two room names are one name: to a person "Mødelokale" and "MØDELOKALE" are the same room,
/// and so are "Café" written with é and with e and a combining accent.
public enum RoomName {
    /// The form in which room names are compared: case-folded without a locale (so "ß" is "ss" and
    /// "Ø" is "ø"), then in Unicode's canonical composed form. Names are unique by it in a company.
    public static func key(_ name: String) -> String {
        name.folding(options: .caseInsensitive, locale: nil).precomposedStringWithCanonicalMapping
    }
}
