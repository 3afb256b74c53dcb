import Foundation
import Testing
import UnlockITLocalization

@testable import UnlockITClient

@Suite struct CredentialsRemovalTests {
    @Test("Logout's removal of the credentials file: gone is fine, one that stays is an error with the way out")
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
