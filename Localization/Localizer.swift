import Foundation

/// Looks strings up in the chosen language's catalog and formats them, numbers and dates the way
/// that language writes them.
public struct Localizer: Sendable {
    public let catalog: Catalog
    public var language: Language { catalog.language }

    public init(catalog: Catalog) { self.catalog = catalog }

    /// The catalog for `language`; English if that catalog cannot be read.
    public init(_ language: Language) {
        if let catalog = try? Catalog.load(language) {
            self.catalog = catalog
        } else {
            self.catalog = (try? Catalog.load(.english)) ?? Catalog(language: .english, entries: [:])
        }
    }

    /// The text for `key`, with `arguments` put into its `%@` and `%lld` placeholders.
    public func callAsFunction(_ key: String, _ arguments: any CVarArg...) -> String {
        text(key, arguments)
    }

    public func text(_ key: String, _ arguments: [any CVarArg]) -> String {
        guard case .text(let format) = catalog.entries[key] else { return key }
        return arguments.isEmpty ? format : String(format: format, locale: language.locale, arguments: arguments)
    }

    /// Whether the catalog has `key`; used for codes that come from the server.
    public func has(_ key: String) -> Bool { catalog.entries[key] != nil }

    /// The plural form of `key` for `count`, e.g. "No Users", "1 User", "5 Users In Total".
    public func plural(_ key: String, count: Int) -> String {
        guard case .plural(let zero, let one, let other) = catalog.entries[key] else { return key }
        let format: String
        switch PluralCategory.of(count, in: language) {
        case .zero: format = zero
        case .one: format = one
        case .other: format = other
        }
        return String(format: format, locale: language.locale, count)
    }

    /// A date and time in the language's short style (e.g. `11/22/26, 9:14:03 AM`, `22.11.2026, 09.14.03`).
    public func dateTime(_ date: Date, timeZone: TimeZone = .current) -> String {
        let formatter = DateFormatter()
        formatter.locale = language.locale
        formatter.timeZone = timeZone
        formatter.dateStyle = .short
        formatter.timeStyle = .medium
        return formatter.string(from: date)
    }

    /// A whole number with the language's grouping (`12,345` / `12.345`).
    public func number(_ value: Int) -> String {
        let formatter = NumberFormatter()
        formatter.locale = language.locale
        formatter.numberStyle = .decimal
        return formatter.string(from: NSNumber(value: value)) ?? String(value)
    }
}
