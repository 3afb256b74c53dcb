import ArgumentParser
import Foundation
import UnlockITCore
import UnlockITLocalization

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(L.current("help.option.server"), valueName: "url"))
    var server: String?

    @Option(name: .long, help: ArgumentHelp(L.current("help.option.lang"), valueName: "en|da"))
    var lang: String?

    @Flag(name: .long, help: ArgumentHelp(L.current("help.option.json")))
    var json = false

    func validate() throws {
        if let lang, Language(code: lang) == nil { throw ValidationError(L.current("error.unknown_language", lang)) }
    }
}

/// The localizer for this run, chosen before arguments are parsed (help texts need it too).
enum L {
    static let current = Localizer(
        Language.resolve(flag: Language.flag(in: CommandLine.arguments), environment: ProcessInfo.processInfo.environment))
}
