import Foundation
import SiteHarness
import Testing

@testable import UnlockITServer

@Suite struct MasterKeyTests {
    @Test("A new key file is the owner's alone, is never overwritten, and reads back as the same key")
    func aCreatedKeyReadsBack() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let path = "\(folder.path)/master.key"
        let created = try MasterKey.create(path: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try MasterKey.load(path: path).checkValue == created.checkValue)
        #expect(throws: MasterKey.MasterKeyError.self) { try MasterKey.create(path: path) }
        #expect(try MasterKey.load(path: path).checkValue == created.checkValue)
    }

    @Test("A key file others can read is refused; one reached through a link is judged by the file's own mode")
    func modesAreTheFiles() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let path = "\(folder.path)/master.key"
        let key = try MasterKey.create(path: path)
        let link = "\(folder.path)/mounted.key"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        // As a secret volume mounts it: a link to a 0600 file is that file.
        #expect(try MasterKey.load(path: link).checkValue == key.checkValue)
        chmod(path, 0o644)
        for name in [path, link] {
            #expect {
                try MasterKey.load(path: name)
            } throws: { "\($0)".contains("chmod 600 \(name)") }
        }
        // The advice works, through the link too.
        chmod(link, 0o600)
        #expect(try MasterKey.load(path: path).checkValue == key.checkValue)
        #expect(throws: MasterKey.MasterKeyError.self) { try MasterKey.load(path: folder.path) }
    }
}
