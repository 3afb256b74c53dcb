import Foundation
import Glibc
import Posix
import Testing

/// Each test gets a folder of its own, removed when the test ends.
@Suite final class FileStatusTests {
    private let folder: String

    init() throws {
        folder = NSTemporaryDirectory() + "posix-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    private func file(_ name: String, mode: mode_t) throws -> String {
        let path = "\(folder)/\(name)"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        #expect(chmod(path, mode) == 0)
        return path
    }

    @Test func aPrivateFileIsRegularOwnedAndClosedToOthers() throws {
        let path = try file("private", mode: 0o600)
        let status = try #require(FileStatus(linkAt: path))
        #expect(status.kind == .regular)
        #expect(status.permissions == 0o600)
        #expect(status.owner == UInt32(getuid()))
        #expect(status.isOwnedByCurrentUser)
        #expect(!status.isOpenToOthers)
    }

    @Test func groupOrOtherBitsAreSeen() throws {
        for mode: mode_t in [0o640, 0o604, 0o610, 0o4600] {
            let status = try #require(FileStatus(linkAt: try file("mode-\(String(mode, radix: 8))", mode: mode)))
            #expect(status.permissions == UInt32(mode))
            #expect(status.isOpenToOthers == (mode & 0o077 != 0), "\(String(mode, radix: 8))")
        }
    }

    @Test func folderLinkAndDescriptorAreToldApart() throws {
        #expect(FileStatus(linkAt: folder)?.kind == .directory)
        let target = try file("target", mode: 0o600)
        let link = "\(folder)/link"
        #expect(symlink(target, link) == 0)
        // The link itself, not what it points to.
        #expect(FileStatus(linkAt: link)?.kind == .symbolicLink)
        let fd = open(link, O_RDONLY | O_CLOEXEC)
        #expect(fd >= 0)
        defer { close(fd) }
        // Through a descriptor: the file that was opened.
        #expect(FileStatus(descriptor: fd)?.kind == .regular)
        #expect(FileStatus(descriptor: fd)?.permissions == 0o600)
    }

    @Test func anotherUsersFileIsNotOwned() throws {
        if getuid() == 0 {
            let path = try file("someone-elses", mode: 0o600)
            #expect(chown(path, 65534, 65534) == 0)
            #expect(FileStatus(linkAt: path)?.owner == 65534)
            #expect(FileStatus(linkAt: path)?.isOwnedByCurrentUser == false)
        } else {
            #expect(FileStatus(linkAt: "/")?.isOwnedByCurrentUser == false)
        }
    }

    @Test func whatCannotBeLookedAtIsNil() {
        #expect(FileStatus(linkAt: "\(folder)/missing") == nil)
        #expect(FileStatus(descriptor: -1) == nil)
    }
}
