import Foundation
import LockProtocol
import Synchronization
import Testing
import UnlockITCore

@testable import LockFirmware

@Suite struct FlashFileTests {
    func temporaryPath() -> String { NSTemporaryDirectory() + "flash-\(UUID().uuidString).json" }

    @Test func firstBootCreatesAPrivateFileThatSurvivesRestarts() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = FlashFile(path: path)
        let (created, firstBoot) = try file.loadOrCreate(lock: LockID("lock-flash"))
        #expect(firstBoot == .written)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)

        var changed = created
        changed.activated = true
        try file.save(changed)
        let (loaded, again) = try file.loadOrCreate()
        #expect(again == nil)
        #expect(loaded.lock == created.lock)
        #expect(loaded.activated)
        #expect(loaded.deviceKey.constantTimeEquals(created.deviceKey))
        #expect(loaded.setupCode.bytes == created.setupCode.bytes)
    }

    @Test func aWriteWhoseFolderCannotBeSyncedTookAndSaysSo() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let syncs = Mutex<[String]>([])
        let file = FlashFile(path: path, durable: true) { synced in
            syncs.withLock { $0.append(synced) }
            return false
        }
        var flash = Flash.firstBoot(lock: try #require(LockID("lock-unsynced")))
        #expect(try file.save(flash) == .writtenNotDurable)
        flash.activated = true
        #expect(try file.save(flash) == .writtenNotDurable)
        // The write is in place: what the lock would boot from says activated.
        #expect(try file.load().activated)
        #expect(syncs.withLock { $0 } == [path, path])
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
        // With the folder synced, the same write is on the disk.
        #expect(try FlashFile(path: path, durable: true, syncFolder: { _ in true }).save(flash) == .written)
    }

    @Test func aWriteThatDidNotTakeThrowsAndLeavesTheFileAsItWas() throws {
        let path = temporaryPath()
        defer { for file in [path, path + ".tmp"] { try? FileManager.default.removeItem(atPath: file) } }
        let synced = Mutex(false)
        let file = FlashFile(path: path, durable: true) { _ in
            synced.withLock { $0 = true }
            return true
        }
        var flash = Flash.firstBoot(lock: try #require(LockID("lock-unwritable")))
        #expect(try file.save(flash) == .written)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        synced.withLock { $0 = false }
        // A folder where the temporary goes: the write fails before anything is renamed.
        try FileManager.default.createDirectory(atPath: path + ".tmp", withIntermediateDirectories: false)
        flash.activated = true
        #expect(throws: FlashFile.FlashError.unwritable(path)) { try file.save(flash) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(synced.withLock { $0 } == false)
    }

    @Test("A FIFO planted as the temporary neither blocks the write nor takes it, with or without a reader")
    func aFIFOAsTheTemporaryIsRefused() throws {
        let path = temporaryPath()
        defer { for file in [path, path + ".tmp"] { try? FileManager.default.removeItem(atPath: file) } }
        let file = FlashFile(path: path, durable: false)
        var flash = Flash.firstBoot(lock: try #require(LockID("lock-fifo")))
        #expect(try file.save(flash) == .written)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(mkfifo(path + ".tmp", 0o600) == 0)
        flash.activated = true
        #expect(throws: FlashFile.FlashError.unwritable(path)) { try file.save(flash) }
        // With a reader, opening it for writing would succeed: the file's type refuses it.
        let reader = open(path + ".tmp", O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { close(reader) }
        #expect(throws: FlashFile.FlashError.unwritable(path)) { try file.save(flash) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test("A flash is read only from a regular file: not through a link, nor from a FIFO, which would block the lock")
    func aFlashIsReadFromARegularFileOnly() throws {
        let path = temporaryPath()
        let target = temporaryPath()
        defer { for file in [path, target] { try? FileManager.default.removeItem(atPath: file) } }
        let flash = Flash.firstBoot(lock: try #require(LockID("lock-read")))
        #expect(try FlashFile(path: target).save(flash) == .written)
        #expect(try FlashFile(path: target).load().lock == flash.lock)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
        #expect(throws: FlashFile.FlashError.unreadable(path)) { try FlashFile(path: path).load() }
        try FileManager.default.removeItem(atPath: path)
        #expect(mkfifo(path, 0o600) == 0)
        #expect(throws: FlashFile.FlashError.unreadable(path)) { try FlashFile(path: path).load() }
        // Nor a file far larger than any flash.
        try FileManager.default.removeItem(atPath: path)
        try Data(repeating: 0x20, count: 70_000).write(to: URL(fileURLWithPath: path))
        #expect(throws: FlashFile.FlashError.unreadable(path)) { try FlashFile(path: path).load() }
    }

    @Test func aFileThatNeedNotBeDurableIsNeverSynced() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = FlashFile(path: path, durable: false) { _ in
            Issue.record("synced a file that need not be durable")
            return false
        }
        #expect(try file.save(Flash.firstBoot(lock: try #require(LockID("lock-fleet")))) == .written)
        #expect(try file.load().lock == LockID("lock-fleet"))
    }

    @Test func aSymbolicLinkPlantedAsTheTemporaryIsNotFollowed() throws {
        let path = temporaryPath()
        let victim = temporaryPath()
        defer { for file in [path, path + ".tmp", victim] { try? FileManager.default.removeItem(atPath: file) } }
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(atPath: path + ".tmp", withDestinationPath: victim)
        #expect(throws: FlashFile.FlashError.unwritable(path)) { try FlashFile(path: path).loadOrCreate(lock: LockID("lock-link")) }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "someone else's")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func aFleetsSecretsAreTheOwnersOnly() throws {
        let directory = NSTemporaryDirectory() + "fleet-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A labels file that was there before, readable by all, is made the owner's too.
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let labelsPath = LockFleet.labelsPath(directory: directory)
        #expect(FileManager.default.createFile(atPath: labelsPath, contents: Data("old".utf8), attributes: [.posixPermissions: 0o644]))
        let labels = try LockFleet.create(directory: directory, count: 2, prefix: "lock-private")
        #expect(try LockFleet.readPairs(labelsPath).map(\.1) == labels.map(\.1.formatted))
        func mode(_ path: String) throws -> Int? {
            (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        }
        #expect(try mode("\(directory)/flash") == 0o700)
        #expect(try mode(labelsPath) == 0o600)
        let fresh = directory + "/new"
        _ = try LockFleet.create(directory: fresh, count: 1, prefix: "lock-private")
        #expect(try mode(fresh) == 0o700)
    }

    @Test("A fleet holds its locks' flashes: no reset, lone lock or second fleet takes one while it lives")
    func aFleetClaimsItsFlashes() throws {
        let directory = NSTemporaryDirectory() + "fleet-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let labels = try LockFleet.create(directory: directory, count: 2, prefix: "lock-claimed")
        let credentials = labels.map { ($0.0, "password") }
        func fleet() throws -> LockFleet {
            try LockFleet(directory: directory, credentials: credentials, host: "127.0.0.1", port: 1, settings: LockSettings(), loopCount: 1)
        }
        let path = LockFleet.flashPath(directory: directory, lock: labels[1].0)
        do {
            let running = try fleet()
            #expect(throws: FlashClaim.ClaimError.inUse(path)) { try FlashClaim(flashPath: path) }
            #expect(throws: FlashClaim.ClaimError.self) { try fleet() }
            withExtendedLifetime(running) {}
        }
        // Let go with the fleet.
        _ = try FlashClaim(flashPath: path)
    }

    @Test func aLockNamedTwiceInACredentialsFileIsRefused() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data("lock-a\tone\nlock-b\ttwo\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try LockFleet.readPairs(path).map(\.0.rawValue) == ["lock-a", "lock-b"])
        // Two shards joined with one lock in both: two runtimes of it would share its flash and client id.
        try Data("lock-a\tone\nlock-b\ttwo\nlock-a\tone\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: LockFleet.FleetError.self) { try LockFleet.readPairs(path) }
    }

    @Test("A line that is not a lock id and a secret is refused by its number, without the secret")
    func aBadLineIsNamedByItsNumber() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let password = "3f9a0c1e5b7d2468ace0bdf13579bdf02468ace13579bdf02468ace13579bdf0"
        // A note after the password: three fields.
        try Data("lock-a\tone\n\nlock-b\t\(password)\tspare\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect {
            try LockFleet.readPairs(path)
        } throws: { error in
            let text = "\(error)"
            return text.contains("line 3") && !text.contains(password) && !text.contains("lock-b")
        }
    }

    @Test func aFleetIsNotBootedTwice() throws {
        let directory = NSTemporaryDirectory() + "fleet-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try LockFleet.create(directory: directory, count: 2, prefix: "lock-twice")
        let flash = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/flash/lock-twice-000002.json"))
        let labels = try Data(contentsOf: URL(fileURLWithPath: LockFleet.labelsPath(directory: directory)))
        #expect(throws: LockFleet.FleetError.self) { try LockFleet.create(directory: directory, count: 3, prefix: "lock-twice") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/flash/lock-twice-000002.json")) == flash)
        #expect(try Data(contentsOf: URL(fileURLWithPath: LockFleet.labelsPath(directory: directory))) == labels)
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/flash/lock-twice-000003.json"))
    }

    @Test func aCorruptFileIsAnErrorNotACrash() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "{\"version\":1,\"lock\":\"x\"}".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: FlashFile.FlashError.self) { try FlashFile(path: path).load() }
    }
}
