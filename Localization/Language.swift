import Foundation

/// The languages UnlockIT speaks.
public enum Language: String, Sendable, CaseIterable {
    case english = "en"
    case danish = "da"

    /// The POSIX locale used for dates and numbers.
    public var locale: Locale {
        switch self {
        case .english: Locale(identifier: "en_US")
        case .danish: Locale(identifier: "da_DK")
        }
    }

    /// Reads `en`, `da`, `da_DK.UTF-8`, `en-GB`…; `nil` for anything else.
    public init?(code: String) {
        let prefix = code.lowercased().prefix { $0.isLetter }
        guard let language = Language(rawValue: String(prefix)) else { return nil }
        self = language
    }

    /// The language to use: `--lang`, then `UNLOCKIT_LANG`, then the first of `LC_ALL`, `LC_MESSAGES`
    /// and `LANG` that is set (as POSIX tools do); English when none names a language UnlockIT speaks.
    ///
    /// Foundation's `Locale.current` cannot be used: on Linux it ignores these variables.
    public static func resolve(flag: String?, environment: [String: String]) -> Language {
        if let flag, let language = Language(code: flag) { return language }
        if let value = environment["UNLOCKIT_LANG"], let language = Language(code: value) { return language }
        for name in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            guard let value = environment[name], !value.isEmpty else { continue }
            return Language(code: value) ?? .english
        }
        return .english
    }

    /// Finds `--lang X` or `--lang=X` in raw arguments, so that help texts can be in the right
    /// language before the arguments are parsed.
    public static func flag(in arguments: [String]) -> String? {
        for (index, argument) in arguments.enumerated() {
            if argument == "--lang", index + 1 < arguments.count { return arguments[index + 1] }
            if argument.hasPrefix("--lang=") { return String(argument.dropFirst("--lang=".count)) }
        }
        return nil
    }
}
