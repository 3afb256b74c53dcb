import Foundation
import LockFirmware
import Testing

@Suite struct FlashClaimTests {
    @Test("A flash is claimed by one holder at a time, and free again once the claim is let go")
    func oneHolderAtATime() throws {
        let path = NSTemporaryDirectory() + "flash-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: path + ".lock") }
        var first: FlashClaim? = try FlashClaim(flashPath: path)
        // flock is per open file, so a second claim in the same process is refused as another process's would be.
        #expect(throws: FlashClaim.ClaimError.inUse(path)) { try FlashClaim(flashPath: path) }
        let mode = try FileManager.default.attributesOfItem(atPath: path + ".lock")[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        withExtendedLifetime(first) {}
        first = nil
        _ = try FlashClaim(flashPath: path)
    }

    @Test("A claim beside a flash in a folder that is not there says where")
    func unavailable() {
        let path = NSTemporaryDirectory() + "missing-\(UUID().uuidString)/flash.json"
        #expect(throws: FlashClaim.ClaimError.unavailable(path: path + ".lock", reason: "No such file or directory")) {
            try FlashClaim(flashPath: path)
        }
    }
}
