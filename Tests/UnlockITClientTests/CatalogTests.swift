import Foundation
import Testing
import UnlockITCore
import UnlockITLocalization

@testable import UnlockITClient

/// The English and Danish catalogs: complete, consistent, and exactly what the code uses.
@Suite struct CatalogTests {
    static let english = try! Catalog.load(.english)
    static let danish = try! Catalog.load(.danish)

    /// Keys built at run time from a prefix and a value of a closed set.
    static let families: [String: Set<String>] = [
        "error.": Set(ProblemCode.allCases.map(\.rawValue)),
        "reason.": Set(AuditReason.allCases.map(\.rawValue)),
        "role.": Set(Role.allCases.map(\.rawValue)),
        "roomtype.": Set(RoomType.allCases.map(\.rawValue)),
        "state.": Set(LockState.allCases.map(\.rawValue)),
        "action.": Set(AuditAction.allCases.map(\.rawValue)),
        "outcome.": Set(AuditOutcome.allCases.map(\.rawValue)),
        "import.reason.": Set(Users.Import.RowReason.allCases.map(\.rawValue)),
        "hint.id_token_invalid.": CLIError.idTokenReasons,
        "audit.reason.": Audit.personalReasons,
    ]

    /// Every key written literally in the CLI's source.
    static let literalKeys: Set<String> = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/UnlockITClient")
        let pattern = try! Regex(#"(?:\bl|L\.current|context\.l|api\.l|\.plural|\.has)\("([a-z_]+(?:\.[a-z_]+)+)""#)
        var keys: Set<String> = []
        for case let url as URL in FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)! where url.pathExtension == "swift" {
            let source = try! String(contentsOf: url, encoding: .utf8)
            for match in source.matches(of: pattern) { keys.insert(String(match.output[1].substring!)) }
        }
        return keys
    }()

    @Test func bothLanguagesHaveTheSameKeys() {
        let en = Set(Self.english.entries.keys)
        let da = Set(Self.danish.entries.keys)
        #expect(en.subtracting(da).isEmpty, "missing in Danish: \(en.subtracting(da).sorted())")
        #expect(da.subtracting(en).isEmpty, "missing in English: \(da.subtracting(en).sorted())")
        #expect(en.count > 300)
    }

    @Test func everyKeyUsedInTheCodeIsInTheCatalogs() {
        #expect(Self.literalKeys.count > 150)
        for key in Self.literalKeys {
            #expect(Self.english.entries[key] != nil, "\(key) is used but not in the catalogs")
        }
        for (prefix, members) in Self.families {
            for member in members where prefix != "hint." {
                #expect(Self.english.entries[prefix + member] != nil, "\(prefix + member) is needed but not in the catalogs")
            }
        }
    }

    /// docs/cli.md: an error is one sentence and, on the next line, what to do. The import's
    /// rejection is the exception: it lists each rejected row and why instead.
    @Test func everyServerCodeSaysWhatToDo() {
        for code in ProblemCode.allCases where code != .importRejected {
            #expect(Self.english.entries["hint.\(code.rawValue)"] != nil, "no hint for \(code.rawValue)")
            #expect(Self.danish.entries["hint.\(code.rawValue)"] != nil, "no Danish hint for \(code.rawValue)")
        }
    }

    @Test func noKeyIsUnused() {
        let problemCodes = Set(ProblemCode.allCases.map(\.rawValue))
        for key in Self.english.entries.keys {
            if Self.literalKeys.contains(key) { continue }
            // Server codes may have a hint; a literal hint key is used directly.
            if key.hasPrefix("hint."), problemCodes.contains(String(key.dropFirst(5))) { continue }
            let inFamily = Self.families.contains { prefix, members in key.hasPrefix(prefix) && members.contains(String(key.dropFirst(prefix.count)))
            }
            #expect(inFamily, "\(key) is in the catalogs but nothing uses it")
        }
    }

    static func specifiers(_ text: String) -> [String] {
        text.matches(of: try! Regex(#"%(?:\d+\$)?(?:lld|@|d)"#)).map { String(text[$0.range]) }.sorted()
    }

    @Test func bothLanguagesUseTheSameFormatSpecifiers() {
        for (key, entry) in Self.english.entries {
            switch (entry, Self.danish.entries[key]) {
            case (.text(let en), .text(let da)?):
                #expect(Self.specifiers(en) == Self.specifiers(da), "\(key): \(en) / \(da)")
            case (.plural(let enZero, let enOne, let enOther), .plural(let daZero, let daOne, let daOther)?):
                #expect(Self.specifiers(enOther) == ["%lld"] && Self.specifiers(daOther) == ["%lld"], "\(key)")
                #expect(Self.specifiers(enZero) == Self.specifiers(daZero) && Self.specifiers(enOne) == Self.specifiers(daOne), "\(key)")
            default:
                Issue.record("\(key) is a text in one language and a plural in the other")
            }
        }
    }

    @Test(arguments: [
        (0, "No Users", "Ingen Brugere"), (1, "1 User", "1 Bruger"), (2, "2 Users In Total", "2 Brugere I Alt"),
        (5, "5 Users In Total", "5 Brugere I Alt"), (21, "21 Users In Total", "21 Brugere I Alt"), (100, "100 Users In Total", "100 Brugere I Alt"),
    ])
    func pluralRules(count: Int, english: String, danish: String) {
        #expect(Localizer(catalog: Self.english).plural("users.count", count: count) == english)
        #expect(Localizer(catalog: Self.danish).plural("users.count", count: count) == danish)
    }

    @Test func pluralCategories() {
        for language in Language.allCases {
            #expect(PluralCategory.of(0, in: language) == .zero)
            #expect(PluralCategory.of(1, in: language) == .one)
            for other in [2, 5, 11, 21, 101, 1_000_000] { #expect(PluralCategory.of(other, in: language) == .other) }
        }
    }

    @Test func numbersAndDatesFollowTheLanguage() {
        let en = Localizer(catalog: Self.english)
        let da = Localizer(catalog: Self.danish)
        #expect(en.number(12345) == "12,345")
        #expect(da.number(12345) == "12.345")
        let date = Date(timeIntervalSince1970: 1_795_338_000)  // 2026-11-22 08:20:00 UTC
        let utc = TimeZone(identifier: "UTC")!
        #expect(en.dateTime(date, timeZone: utc).contains("11/22/26"))
        #expect(da.dateTime(date, timeZone: utc).contains("22.11.2026"))
        #expect(en("error.access_denied", "x") == "Access denied: x.")
        #expect(da("error.access_denied", "x") == "Adgang nægtet: x.")
    }
}
