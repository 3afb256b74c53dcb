import ArgumentParser
import Testing
import UnlockITLocalization

@testable import UnlockITClient

/// Which door `unlockit unlock` asks the server to open: never one the words did not name.
@Suite struct UnlockChoiceTests {
    let l = Localizer(.english)

    func entry(_ lock: String, room: String, roomID: String) -> AccessEntryModel {
        AccessEntryModel(lockId: lock, lockName: "Door \(lock)", roomId: roomID, roomName: room, allowed: true, reason: "", online: true)
    }

    func choose(_ arguments: [String], _ entries: [AccessEntryModel]) throws -> String {
        try Unlock.parse(arguments).choose(from: entries, l).lockId
    }

    @Test func aLockIDARoomNameAndLockAreEachTakenAsWhatTheyName() throws {
        let entries = [
            entry("lab", room: "Hall", roomID: "r1"), entry("lab-side", room: "Lab", roomID: "r2"), entry("front", room: "Front", roomID: "r3"),
        ]
        // "lab" is a lock's id and a room's name: refused, not guessed.
        #expect(throws: CLIError.self) { _ = try choose(["lab"], entries) }
        // With --lock, the target is the room: the lock named is opened, not the lock whose id is the target.
        #expect(try choose(["lab", "--lock", "lab-side"], entries) == "lab-side")
        #expect(throws: CLIError.self) { _ = try choose(["lab", "--lock", "lab"], entries) }
        // --lock alone, a lock id alone and a room with one lock are unambiguous.
        #expect(try choose(["--lock", "lab"], entries) == "lab")
        #expect(try choose(["front"], entries) == "front")
        #expect(try choose(["Hall"], entries) == "lab")
        #expect(try choose(["FRONT"], entries) == "front")
    }

    @Test("A target that names no room is sent as a lock id only if it is one")
    func onlyALockIDIsSentAsOne() throws {
        let entries = [entry("front", room: "Front", roomID: "r1")]
        // A lock this user cannot see: the server answers for it.
        #expect(try choose(["lock-back-door"], entries) == "lock-back-door")
        // Room names that are no lock id: the user mistyped a room, and is told so here.
        for name in ["Meeting room", "Lab", "mødelokale", "kantine²", "lab_side"] {
            #expect(throws: CLIError.self, "\(name)") { _ = try choose([name], entries) }
        }
    }
}
