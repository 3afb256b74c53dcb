import Testing
import UnlockITLocalization

@testable import UnlockITClient

@Suite struct LanguageTests {
    @Test func theFlagThenUnlockITLangThenPOSIXVariables() {
        #expect(Language.resolve(flag: "da", environment: ["LANG": "en_US.UTF-8"]) == .danish)
        #expect(Language.resolve(flag: nil, environment: ["UNLOCKIT_LANG": "da", "LANG": "en_US.UTF-8"]) == .danish)
        #expect(Language.resolve(flag: nil, environment: ["LC_ALL": "da_DK.UTF-8", "LANG": "en_US"]) == .danish)
        #expect(Language.resolve(flag: nil, environment: ["LC_MESSAGES": "da_DK", "LANG": "en_US"]) == .danish)
        #expect(Language.resolve(flag: nil, environment: ["LANG": "da_DK.UTF-8"]) == .danish)
        // The first variable that is set decides, as for POSIX tools; unknown languages mean English.
        #expect(Language.resolve(flag: nil, environment: ["LC_ALL": "fr_FR.UTF-8", "LANG": "da_DK"]) == .english)
        #expect(Language.resolve(flag: nil, environment: ["LC_ALL": "", "LANG": "da_DK"]) == .danish)
        #expect(Language.resolve(flag: nil, environment: [:]) == .english)
        #expect(Language.resolve(flag: "xx", environment: ["LANG": "da"]) == .danish)
    }

    @Test func theFlagIsFoundBeforeParsing() {
        #expect(Language.flag(in: ["unlockit", "users", "list", "--lang", "da"]) == "da")
        #expect(Language.flag(in: ["unlockit", "--lang=da", "users"]) == "da")
        #expect(Language.flag(in: ["unlockit", "users"]) == nil)
    }

    @Test func globalOptionsBeforeTheSubcommandMoveToTheEnd() {
        #expect(UnlockITCommand.hoistingGlobalOptions(["--lang", "da", "users", "list"]) == ["users", "list", "--lang", "da"])
        #expect(
            UnlockITCommand.hoistingGlobalOptions(["--json", "--server=http://x", "access"]) == ["access", "--json", "--server=http://x"])
        #expect(UnlockITCommand.hoistingGlobalOptions(["users", "list", "--json"]) == ["users", "list", "--json"])
        #expect(UnlockITCommand.hoistingGlobalOptions(["--help"]) == ["--help"])
    }
}
