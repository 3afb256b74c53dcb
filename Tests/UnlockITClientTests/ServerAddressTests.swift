import ArgumentParser
import Testing

@testable import UnlockITClient

/// The server's address as the CLI takes it.
@Suite struct ServerAddressTests {
    private func address(_ url: String, language: String = "en") throws -> String {
        try CommandContext(try GlobalOptions.parse(["--lang", language, "--server", url]), environment: [:]).serverURL(stored: nil)
    }

    @Test func aUserNameOrPasswordInTheAddressIsRefusedWithoutRepeatingIt() throws {
        for url in ["https://admin:S3cret@unlockit.example.com", "https://admin@unlockit.example.com", "http://u:S3cret@127.0.0.1:8080"] {
            do {
                _ = try address(url)
                Issue.record("\(url) was taken")
            } catch let error as CLIError {
                #expect(error.status == .usage)
                #expect(error.message == "The server's address must not contain a user name or password.")
                #expect(!error.message.contains("S3cret") && !(error.hint ?? "").contains("S3cret"))
            }
        }
        let danish = #expect(throws: CLIError.self) { try address("https://a:b@unlockit.example.com", language: "da") }
        #expect(danish?.message == "Serverens adresse må ikke indeholde et brugernavn eller en adgangskode.")
        #expect(try address("https://unlockit.example.com/") == "https://unlockit.example.com")
        #expect(try address("http://127.0.0.1:8080") == "http://127.0.0.1:8080")
    }
}
