import Foundation
import LockProtocol
import MQTT
import SiteHarness
import Testing
import UnlockITCore

@testable import LockFirmware

/// A running lock's activation against its flash, through a real mosquitto: what the lock does when
/// its flash write takes but its folder cannot be synced, and when the write does not take.
@Suite struct LockRuntimeFlashTests {
    /// Pairs a lock whose flash folder syncs as `folderSyncs` says, playing the server's part by
    /// hand (activate, unwrap, challenge, confirm); returns the confirmation's result and the lock.
    private func activate(
        folderSyncs: Bool, blockTheWrite: Bool = false
    ) async throws -> (result: Event, runtime: Bool, file: Bool) {
        let directory = try TemporaryDirectory("unlockit-runtime-flash")
        let broker = try await TestBroker.start(in: directory.path)
        defer { Task { await broker.stop() } }
        let lock = try #require(LockID("lock-runtime-flash"))
        // One account for the lock and for the client playing the server (their client ids differ).
        try await broker.addSuperuser(username: lock.rawValue, password: "lock password")

        let path = "\(directory.path)/flash.json"
        let flashFile = FlashFile(path: path, durable: true) { _ in folderSyncs }
        let flash = Flash.firstBoot(lock: lock)
        #expect(try flashFile.save(flash) == (folderSyncs ? .written : .writtenNotDurable))
        if blockTheWrite { try FileManager.default.createDirectory(atPath: path + ".tmp", withIntermediateDirectories: false) }

        let server = try MQTTClient(
            configuration: MQTTClientConfiguration(
                host: "127.0.0.1", port: broker.port, clientID: "server", username: lock.rawValue, password: "lock password",
                subscriptions: [Topics.event(lock)]))
        let runtime = try LockRuntime(
            device: LockDevice(flash: flash), flashFile: flashFile,
            broker: BrokerEndpoint(host: "127.0.0.1", port: broker.port, password: "lock password"))
        server.start()
        runtime.start()
        try await server.waitUntilConnected(timeout: .seconds(30))
        try await Network.waitUntil("the lock connected", timeout: .seconds(30)) { runtime.isConnected }
        try await Task.sleep(for: .milliseconds(300))  // the subscriptions' SUBACKs
        runtime.enterPairingMode()

        var events = server.messages.makeAsyncIterator()
        func answer(to command: Command) async throws -> Event {
            try server.publish(topic: Topics.command(lock), payload: command.encoded(), qos: .atMostOnce)
            while let message = await events.next() {
                if let event = try? Event.decode(message.payload), event.req == command.req { return event }
            }
            throw HarnessError("the server's client ended")
        }
        guard case .activated(_, let wrapped, let kcv) = try await answer(to: .activate(req: .random())) else {
            throw HarnessError("no activated event")
        }
        let key = try #require(KeyWrap.unwrap(wrapped, kcv: kcv, setupCode: flash.setupCode, lock: lock))
        let req = RequestID.random()
        guard case .nonce(_, let nonce) = try await answer(to: .challenge(req: req)) else { throw HarnessError("no nonce") }
        let result = try await answer(to: .confirm(req: req, response: ChallengeResponse.confirmation(nonce: nonce, key: key)))
        let activatedOnFile = try FlashFile(path: path).load().activated
        let activatedInMemory = runtime.isActivated
        await runtime.shutdown()
        await server.shutdown()
        return (result, activatedInMemory, activatedOnFile)
    }

    @Test func aFlashWriteWhoseFolderCannotBeSyncedStillActivatesTheLock() async throws {
        let (result, runtime, file) = try await activate(folderSyncs: false)
        guard case .result(_, let granted, let reason) = result else { throw HarnessError("expected a result, got \(result)") }
        #expect(granted, "\(String(describing: reason))")
        #expect(runtime)
        #expect(file)
    }

    @Test func aFlashWriteThatDidNotTakeUndoesTheActivationOnBothSides() async throws {
        let (result, runtime, file) = try await activate(folderSyncs: true, blockTheWrite: true)
        #expect(result.req != nil)
        guard case .result(_, let granted, let reason) = result else { throw HarnessError("expected a result, got \(result)") }
        #expect(!granted)
        #expect(reason == .notActivated)
        #expect(!runtime)
        #expect(!file)
    }
}
