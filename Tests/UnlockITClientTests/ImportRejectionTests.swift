import Testing
import UnlockITLocalization

@testable import UnlockITClient

/// The server's rejections of an import, by row index, said as the file's lines and columns.
@Suite struct ImportRejectionTests {
    let l = Localizer(.english)
    /// Rows 0, 1 and 2 of the body came from lines 2, 3 and 5 of the file (line 4 was blank).
    let lines = [2, 3, 5]

    @Test func rowsAndTheRowsTheyRepeatAreTheFilesLines() throws {
        let rejections = try Users.Import.rejections(
            [
                ServerAPI.ImportRowError(index: 1, field: "securityLevel", reason: "invalid_level"),
                ServerAPI.ImportRowError(index: 2, field: "email", reason: "duplicate_in_file(0)"),
            ], lines: lines, l)
        #expect(rejections.map(\.line) == [3, 5])
        #expect(rejections.map(\.field) == ["level", "email"])
        #expect(rejections.map(\.reason) == ["invalid_level", "duplicate_in_file(2)"])
        #expect(Users.Import.reasonText(rejections[1].reason, l) == "the email is already on line 2")
    }

    @Test func anIndexTheFileDoesNotHaveIsAnUnreadableAnswerNotACrash() {
        for error in [
            ServerAPI.ImportRowError(index: 3, field: "email", reason: "invalid_email"),
            ServerAPI.ImportRowError(index: -1, field: "email", reason: "invalid_email"),
            ServerAPI.ImportRowError(index: 0, field: "email", reason: "duplicate_in_file(7)"),
        ] {
            let thrown = #expect(throws: CLIError.self) { try Users.Import.rejections([error], lines: lines, l) }
            #expect(thrown?.message == "The server's answer could not be read.")
        }
    }
}
