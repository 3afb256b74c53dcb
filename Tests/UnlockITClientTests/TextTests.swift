import ArgumentParser
import Testing
import UnlockITLocalization

@testable import UnlockITClient

@Suite struct TextTests {
    @Test func csvHandlesQuotesCommasAndLineNumbers() {
        let rows = CSV.rows("email,name\r\n\"a@x.dk\",\"Berg, Ann\"\n\nb@x.dk,\"Say \"\"hi\"\"\"\nc@x.dk,\"two\nlines\"\nd@x.dk,last")
        #expect(rows.map(\.line) == [1, 2, 4, 5, 7])
        #expect(rows[1].fields == ["a@x.dk", "Berg, Ann"])
        #expect(rows[2].fields == ["b@x.dk", "Say \"hi\""])
        #expect(rows[3].fields == ["c@x.dk", "two\nlines"])
        #expect(rows[4].fields == ["d@x.dk", "last"])
    }

    @Test func tablesAreAligned() {
        var table = Table(["Name", "Niveau"])
        table.add(["Åse Ørsted", "3"])
        table.add(["Bo", "12"])
        #expect(table.rendered == "Name        Niveau\nÅse Ørsted  3\nBo          12")
    }

    @Test func auditChangesAreSaidInTheUsersLanguage() throws {
        let context = CommandContext(try GlobalOptions.parse(["--lang", "da"]), environment: [:])
        // A retired lock's device id registered again: the event records the state it was taken over from.
        let changes = [
            AuditChangeModel(field: "state", from: "retired", to: "registered"), AuditChangeModel(field: "name", from: "Dør", to: "Port"),
            AuditChangeModel(field: "roomId", from: nil, to: "room-1"),
        ]
        #expect(Audit.changes(changes, rooms: ["room-1": "Lab"], context) == "Tilstand: udfaset → registreret; Navn: Dør → Port; Rum: – → Lab")
    }

    @Test func importFilesFromSpreadsheets() throws {
        let l = Localizer(.english)
        // A byte-order mark, a blank row exported as commas, a line of spaces, and a password with spaces kept as written.
        let text = "\u{FEFF}email,name,role,level,password\r\n,,,,\r\n   \r\na@x.dk, Ann ,employee,1,\"  long passphrase  \"\r\n"
        let (rows, lines, rejections) = try Users.Import.parse(text, l)
        #expect(rejections.isEmpty, "\(rejections)")
        #expect(lines == [4])
        #expect(rows.map(\.name) == ["Ann"])
        #expect(rows.map(\.password) == ["  long passphrase  "])
        // A column given twice is refused, not half ignored.
        #expect(throws: CLIError.self) { _ = try Users.Import.parse("email,name,role,level,level\na@x.dk,A,employee,1,5\n", l) }
    }

    @Test func anImportOverTheServersLimitIsRefusedBeforeItIsSent() throws {
        let l = Localizer(.english)
        func file(_ count: Int) -> String { "email,name,role,level\n" + (1...count).map { "u\($0)@x.dk,U\($0),employee,1\n" }.joined() }
        #expect(try Users.Import.parse(file(Users.Import.maximumRows), l).0.count == Users.Import.maximumRows)
        #expect {
            try Users.Import.parse(file(Users.Import.maximumRows + 1), l)
        } throws: { error in
            (error as? CLIError)?.message == "The file has 10,001 users; one import takes at most 10,000."
        }
    }
}
