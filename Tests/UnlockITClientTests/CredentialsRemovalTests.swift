import Foundation
import Testing
import UnlockITLocalization

@testable import UnlockITClient

@Suite struct CredentialsRemovalTests {
    @Test("Logout's removal of the credentials file and killed CLIs' copies of it: gone is fine, one that stays is an error with the way out")
    func removal() throws {
        let l = Localizer(catalog: try Catalog.load(.english))
        let folder = NSTemporaryDirectory() + "credentials-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/credentials"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("{}".utf8)))
        try Credentials.remove(at: file, l)
        #expect(!FileManager.default.fileExists(atPath: file))
        try Credentials.remove(at: file, l)
        // The copies of CLIs killed between writing and renaming go too; a living writer's stays, and
        // so does anything else in the folder.
        let finished = Process()
        finished.executableURL = URL(fileURLWithPath: "/bin/true")
        try finished.run()
        finished.waitUntilExit()
        let dead = "\(file).\(finished.processIdentifier).12345.tmp"
        let living = "\(file).\(getpid()).678.tmp"
        let others = ["\(folder)/notes.tmp", "\(file).\(finished.processIdentifier).tmp", "\(file)-\(finished.processIdentifier).1.tmp"]
        for path in [file, dead, living] + others { #expect(FileManager.default.createFile(atPath: path, contents: Data("{}".utf8))) }
        try Credentials.remove(at: file, l)
        #expect(!FileManager.default.fileExists(atPath: file) && !FileManager.default.fileExists(atPath: dead))
        for path in [living] + others { #expect(FileManager.default.fileExists(atPath: path), "\(path)") }
        try FileManager.default.removeItem(atPath: living)
        // Something unlink cannot remove, whoever runs the test (root included): a folder.
        try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: false)
        #expect {
            try Credentials.remove(at: file, l)
        } throws: { error in
            guard let error = error as? CLIError else { return false }
            return error.status == .failure && error.message.contains(file) && (error.hint ?? "").contains("rm \(file)")
        }
    }
}
