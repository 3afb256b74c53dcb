import Foundation

/// A string catalog: `Catalogs/<language>.json`, a flat object from key to either a string or a
/// plural object `{"zero": …, "one": …, "other": …}`.
///
/// Loaded by hand rather than through Foundation's `.strings`/`.stringsdict` support, which on Linux
/// crashes on plural lookups and cannot follow `LANG`.
public struct Catalog: Sendable {
    public enum Entry: Sendable, Equatable {
        case text(String)
        case plural(zero: String, one: String, other: String)
    }

    public let language: Language
    public let entries: [String: Entry]

    public enum CatalogError: Error, CustomStringConvertible {
        case missing(Language)
        case malformed(Language, key: String)

        public var description: String {
            switch self {
            case .missing(let language): "the \(language.rawValue) catalog is missing"
            case .malformed(let language, let key): "the \(language.rawValue) catalog's entry \"\(key)\" is neither a string nor a plural"
            }
        }
    }

    public init(language: Language, entries: [String: Entry]) {
        self.language = language
        self.entries = entries
    }

    /// Loads the catalog shipped with the program.
    public static func load(_ language: Language) throws -> Catalog {
        guard let url = Bundle.module.url(forResource: language.rawValue, withExtension: "json", subdirectory: "Catalogs"),
            let data = try? Data(contentsOf: url)
        else { throw CatalogError.missing(language) }
        return try parse(data, language: language)
    }

    public static func parse(_ data: Data, language: Language) throws -> Catalog {
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { throw CatalogError.missing(language) }
        var entries: [String: Entry] = [:]
        for (key, value) in object {
            if let text = value as? String {
                entries[key] = .text(text)
            } else if let forms = value as? [String: String], let zero = forms["zero"], let one = forms["one"], let other = forms["other"],
                forms.count == 3
            {
                entries[key] = .plural(zero: zero, one: one, other: other)
            } else {
                throw CatalogError.malformed(language, key: key)
            }
        }
        return Catalog(language: language, entries: entries)
    }
}

/// The plural category of a whole number, as CLDR defines it for English and Danish (`one` is
/// exactly 1), with the explicit `zero` the product wants ("No Users").
public enum PluralCategory: String, Sendable, CaseIterable {
    case zero, one, other

    public static func of(_ count: Int, in language: Language) -> PluralCategory {
        switch (count, language) {
        case (0, _): .zero
        case (1, .english), (1, .danish): .one
        default: .other
        }
    }
}
