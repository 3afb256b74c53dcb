import Foundation
import LockFirmware
import LockProtocol
import Testing
import UnlockITCore

@Suite struct FlashFileTests {
    func temporaryPath() -> String { NSTemporaryDirectory() + "flash-\(UUID().uuidString).json" }

    @Test func firstBootCreatesAPrivateFileThatSurvivesRestarts() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = FlashFile(path: path)
        let (created, firstBoot) = try file.loadOrCreate(lock: LockID("lock-flash"))
        #expect(firstBoot)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)

        var changed = created
        changed.activated = true
        try file.save(changed)
        let (loaded, again) = try file.loadOrCreate()
        #expect(!again)
        #expect(loaded.lock == created.lock)
        #expect(loaded.activated)
        #expect(loaded.deviceKey.constantTimeEquals(created.deviceKey))
        #expect(loaded.setupCode.bytes == created.setupCode.bytes)
    }

    @Test func aCorruptFileIsAnErrorNotACrash() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "{\"version\":1,\"lock\":\"x\"}".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: FlashFile.FlashError.self) { try FlashFile(path: path).load() }
    }
}
