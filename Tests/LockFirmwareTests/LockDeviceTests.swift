import Foundation
import LockFirmware
import LockProtocol
import Testing
import UnlockITCore

/// The lock's state machine, with time under the test's control.
@Suite struct LockDeviceTests {
    let lock = LockID("lock-device-test")!
    let t0 = ContinuousClock.now
    let settings = LockSettings(openDuration: .seconds(3), challengeLifetime: .seconds(5), pairingWindow: .seconds(300))

    func device(activated: Bool = false) -> LockDevice {
        var flash = Flash.firstBoot(lock: lock)
        flash.activated = activated
        return LockDevice(flash: flash, settings: settings)
    }

    func send(_ device: inout LockDevice, _ command: Command, at offset: Duration = .zero) -> [LockDevice.Effect] {
        device.handle(command.encoded(), now: t0 + offset)
    }

    /// Runs challenge → nonce and returns the nonce.
    func nonce(_ device: inout LockDevice, req: RequestID, at offset: Duration = .zero) throws -> Block128 {
        let effects = send(&device, .challenge(req: req), at: offset)
        guard case .publish(.nonce(let answered, let nonce)) = try #require(effects.first), answered == req else {
            Issue.record("expected a nonce, got \(effects)")
            return .zero
        }
        return nonce
    }

    /// Runs challenge → nonce and returns the correct `respond` proof for it.
    func challenge(_ device: inout LockDevice, req: RequestID, at offset: Duration = .zero) throws -> Block128 {
        ChallengeResponse.compute(nonce: try nonce(&device, req: req, at: offset), key: device.flash.deviceKey)
    }

    @Test func pairingNeedsPairingModeAndHappensOnlyOnce() throws {
        var device = device()
        let req = RequestID("p1")!
        #expect(send(&device, .activate(req: req)) == [.publish(.error(req: req, reason: .notInPairingMode))])

        device.enterPairingMode(now: t0)
        let effects = send(&device, .activate(req: req))
        guard case .publish(.activated(_, let wrapped, let kcv)) = try #require(effects.first) else {
            Issue.record("expected activated, got \(effects)")
            return
        }
        // Answering activate changes nothing yet: a wrong code at the server can be retried.
        #expect(!device.flash.activated)
        #expect(send(&device, .activate(req: req)).count == 1)
        let key = try #require(KeyWrap.unwrap(wrapped, kcv: kcv, setupCode: device.flash.setupCode, lock: lock))

        let confirm = RequestID("p2")!
        let nonceEffects = send(&device, .challenge(req: confirm))
        guard case .publish(.nonce(_, let nonce)) = try #require(nonceEffects.first) else {
            Issue.record("not the answer the protocol gives here"); return
        }
        let confirmed = send(&device, .confirm(req: confirm, response: ChallengeResponse.confirmation(nonce: nonce, key: key)))
        #expect(confirmed == [.persist(req: confirm), .publish(.result(req: confirm, granted: true, reason: nil)), .statusChanged])
        #expect(device.flash.activated)
        #expect(!device.isPairing(now: t0))
        #expect(device.counters.openings == 0)

        // Activated: pairing is over, even if the button is pressed again.
        device.enterPairingMode(now: t0)
        #expect(send(&device, .activate(req: req)) == [.publish(.error(req: req, reason: .alreadyActivated))])
    }

    @Test func anActivationTheFlashCouldNotHoldIsUndone() throws {
        var device = device()
        device.enterPairingMode(now: t0)
        let effects = send(&device, .activate(req: RequestID("p1")!))
        guard case .publish(.activated(_, let wrapped, let kcv)) = try #require(effects.first) else {
            Issue.record("not the answer the protocol gives here"); return
        }
        let key = try #require(KeyWrap.unwrap(wrapped, kcv: kcv, setupCode: device.flash.setupCode, lock: lock))
        let confirm = RequestID("p2")!
        guard case .publish(.nonce(_, let nonce)) = try #require(send(&device, .challenge(req: confirm)).first) else {
            Issue.record("not the answer the protocol gives here"); return
        }
        _ = send(&device, .confirm(req: confirm, response: ChallengeResponse.confirmation(nonce: nonce, key: key)))
        #expect(device.flash.activated)
        // The runtime could not write the flash.
        #expect(device.activationNotStored(req: confirm) == [.publish(.result(req: confirm, granted: false, reason: .notActivated))])
        #expect(!device.flash.activated)
        let unlock = RequestID("u1")!
        #expect(send(&device, .challenge(req: unlock)) == [.publish(.error(req: unlock, reason: .notActivated))])
    }

    @Test func anActivatedLockAnswersALaterConfirmationWithoutOpening() throws {
        var device = device(activated: true)
        let req = RequestID("again")!
        let expected = ChallengeResponse.confirmation(nonce: try nonce(&device, req: req), key: device.flash.deviceKey)
        // The proof a server gives after losing the answer that activated the lock: answered, nothing else.
        #expect(send(&device, .confirm(req: req, response: expected)) == [.publish(.result(req: req, granted: true, reason: nil))])
        #expect(device.flash.activated)
        #expect(device.counters.openings == 0)
        // The challenge is spent: the same proof again, or a respond with it, is refused and opens nothing.
        #expect(send(&device, .confirm(req: req, response: expected)) == [.publish(.result(req: req, granted: false, reason: .noPendingChallenge))])
        #expect(send(&device, .respond(req: req, response: expected)) == [.publish(.result(req: req, granted: false, reason: .noPendingChallenge))])
        // A wrong proof is refused.
        let wrong = RequestID("wrong")!
        _ = try challenge(&device, req: wrong)
        #expect(send(&device, .confirm(req: wrong, response: .random())) == [.publish(.result(req: wrong, granted: false, reason: .badResponse))])
        #expect(device.counters.openings == 0)
    }

    @Test func aConfirmationsProofOpensNothingAndARespondsConfirmsNothing() throws {
        var device = device(activated: true)
        let key = device.flash.deviceKey
        // A confirmation's proof with its `op` rewritten to `respond`: refused, and nothing opens.
        let rewritten = RequestID("rewritten")!
        let first = try nonce(&device, req: rewritten)
        #expect(
            send(&device, .respond(req: rewritten, response: ChallengeResponse.confirmation(nonce: first, key: key)))
                == [.publish(.result(req: rewritten, granted: false, reason: .badResponse))])
        #expect(device.counters.openings == 0)
        // A respond's proof sent as a confirmation: refused by an activated lock…
        let asConfirm = RequestID("as-confirm")!
        let second = try nonce(&device, req: asConfirm)
        #expect(
            send(&device, .confirm(req: asConfirm, response: ChallengeResponse.compute(nonce: second, key: key)))
                == [.publish(.result(req: asConfirm, granted: false, reason: .badResponse))])
        // … and by one in pairing, which stays unactivated.
        var pairing = self.device()
        pairing.enterPairingMode(now: t0)
        _ = send(&pairing, .activate(req: RequestID("p1")!))
        let confirm = RequestID("p2")!
        let third = try nonce(&pairing, req: confirm)
        #expect(
            send(&pairing, .confirm(req: confirm, response: ChallengeResponse.compute(nonce: third, key: pairing.flash.deviceKey)))
                == [.publish(.result(req: confirm, granted: false, reason: .badResponse))])
        #expect(!pairing.flash.activated)
    }

    @Test func pairingModeExpires() {
        var device = device()
        device.enterPairingMode(now: t0)
        #expect(device.isPairing(now: t0 + .seconds(299)))
        #expect(!device.isPairing(now: t0 + .seconds(300)))
        let req = RequestID("late")!
        #expect(send(&device, .activate(req: req), at: .seconds(301)) == [.publish(.error(req: req, reason: .notInPairingMode))])
    }

    @Test func aLaterPairingSessionNeedsItsOwnActivate() throws {
        var device = device()
        device.enterPairingMode(now: t0)
        #expect(send(&device, .activate(req: RequestID("p1")!)).count == 1)
        // The window ends unconfirmed; the button is pressed again much later.
        device.enterPairingMode(now: t0 + .seconds(400))
        let req = RequestID("p2")!
        #expect(send(&device, .challenge(req: req), at: .seconds(401)) == [.publish(.error(req: req, reason: .notActivated))])
        // Pressed again within a session, the session goes on.
        #expect(send(&device, .activate(req: RequestID("p3")!), at: .seconds(402)).count == 1)
        device.enterPairingMode(now: t0 + .seconds(403))
        _ = try challenge(&device, req: RequestID("p4")!, at: .seconds(404))
    }

    @Test func aWrongConfirmationDoesNotActivate() throws {
        var device = device()
        device.enterPairingMode(now: t0)
        _ = send(&device, .activate(req: RequestID("a")!))
        let req = RequestID("c")!
        _ = try challenge(&device, req: req)
        let effects = send(&device, .confirm(req: req, response: .random()))
        #expect(effects == [.publish(.result(req: req, granted: false, reason: .badResponse))])
        #expect(!device.flash.activated)
    }

    @Test func aCorrectResponseOpensOnce() throws {
        var device = device(activated: true)
        let req = RequestID("u1")!
        let response = try challenge(&device, req: req)
        #expect(send(&device, .respond(req: req, response: response)) == [.publish(.result(req: req, granted: true, reason: nil)), .openRelay])
        // The same respond again (a replay, a QoS 1 redelivery) opens nothing.
        #expect(send(&device, .respond(req: req, response: response)) == [.publish(.result(req: req, granted: false, reason: .noPendingChallenge))])
        #expect(device.counters.openings == 1)
        #expect(device.counters.denials == 1)
    }

    @Test func aWrongResponseConsumesTheChallenge() throws {
        var device = device(activated: true)
        let req = RequestID("u2")!
        let response = try challenge(&device, req: req)
        #expect(send(&device, .respond(req: req, response: .random())) == [.publish(.result(req: req, granted: false, reason: .badResponse))])
        // The right answer after a wrong one is too late: no guessing.
        #expect(send(&device, .respond(req: req, response: response)) == [.publish(.result(req: req, granted: false, reason: .noPendingChallenge))])
        #expect(device.counters.openings == 0)
    }

    @Test func aLateResponseIsDenied() throws {
        var device = device(activated: true)
        let req = RequestID("u3")!
        let response = try challenge(&device, req: req)
        #expect(
            send(&device, .respond(req: req, response: response), at: .seconds(5))
                == [.publish(.result(req: req, granted: false, reason: .expired))])
        #expect(device.counters.openings == 0)
    }

    @Test func onlyTheLatestChallengeCounts() throws {
        var device = device(activated: true)
        let first = RequestID("first")!
        let second = RequestID("second")!
        let firstResponse = try challenge(&device, req: first)
        _ = try challenge(&device, req: second)
        #expect(
            send(&device, .respond(req: first, response: firstResponse))
                == [.publish(.result(req: first, granted: false, reason: .noPendingChallenge))])
    }

    @Test func aConnectionChangeForgetsTheChallenge() throws {
        var device = device(activated: true)
        let req = RequestID("u4")!
        let response = try challenge(&device, req: req)
        device.connectionChanged()
        #expect(send(&device, .respond(req: req, response: response)) == [.publish(.result(req: req, granted: false, reason: .noPendingChallenge))])
    }

    @Test func anUnactivatedLockOpensForNobody() {
        var device = device()
        let req = RequestID("u5")!
        #expect(send(&device, .challenge(req: req)) == [.publish(.error(req: req, reason: .notActivated))])
        #expect(send(&device, .respond(req: req, response: .random())) == [.publish(.result(req: req, granted: false, reason: .noPendingChallenge))])
    }

    @Test func malformedCommandsAreDroppedAndCounted() {
        var device = device(activated: true)
        for payload in ["", "{}", "nope", #"{"v":1,"op":"respond","req":"x"}"#] {
            #expect(device.handle(Array(payload.utf8), now: t0).isEmpty)
        }
        #expect(device.counters.malformed == 4)
    }

    @Test func factoryResetKeepsTheLabelAndForgetsTheKey() {
        var device = device(activated: true)
        let key = device.flash.deviceKey
        let code = device.flash.setupCode.formatted
        device.factoryReset()
        #expect(!device.flash.activated)
        #expect(!device.flash.deviceKey.constantTimeEquals(key))
        #expect(device.flash.setupCode.formatted == code)
        #expect(device.flash.lock == lock)
    }
}
