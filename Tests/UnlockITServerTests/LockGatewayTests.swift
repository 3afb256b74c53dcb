import Foundation
import LockProtocol
import Logging
import MQTT
import SiteHarness
import Synchronization
import Testing
import UnlockITCore

@testable import UnlockITServer

/// The gateway against a fake broker link: the test plays the lock.
@Suite struct LockGatewayTests {
    final class FakeLink: CommandLink {
        private let sent = Mutex<[(topic: String, payload: [UInt8])]>([])
        private let retainedMessages = Mutex<[(topic: String, payload: [UInt8], qos: QoS)]>([])
        var isConnected: Bool { true }

        /// When set, handing a `respond` to the broker takes this many seconds (a busy connection).
        let respondDelay = Mutex<TimeInterval?>(nil)

        func publish(topic: String, payload: [UInt8], qos: QoS, retain: Bool) throws(MQTTError) {
            if let delay = respondDelay.withLock({ $0 }), case .respond = try? Command.decode(payload) {
                Thread.sleep(forTimeInterval: delay)
            }
            sent.withLock { $0.append((topic, payload)) }
            if retain { retainedMessages.withLock { $0.append((topic, payload, qos)) } }
        }

        /// The retained messages published so far.
        var retained: [(topic: String, payload: [UInt8], qos: QoS)] { retainedMessages.withLock { $0 } }

        var commands: [Command] { sent.withLock { $0.compactMap { try? Command.decode($0.payload) } } }

        /// Timers run when the test says so: no test depends on how fast the machine is. Once the
        /// test has given up (``giveUp()``), every timer fires at once, pending or still to come.
        private let timers = Mutex<(pending: [(delay: Duration, action: @Sendable () -> Void)], givenUp: Bool)>(([], false))

        func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
            let now = timers.withLock { timers in
                if !timers.givenUp { timers.pending.append((delay, action)) }
                return timers.givenUp
            }
            if now { Task { action() } }
        }

        var scheduledDelays: [Duration] { timers.withLock { $0.pending.map(\.delay) } }

        func fireTimers() {
            let due = timers.withLock { timers in
                defer { timers.pending.removeAll() }
                return timers.pending.map(\.action)
            }
            for action in due { action() }
        }

        /// The lock goes silent for good: every unlock and activation still waiting times out now,
        /// and every later one at once. A test that fails midway calls it, so that it ends instead of
        /// waiting at the end of its scope for an `async let` whose answer will never come.
        func giveUp() {
            timers.withLock { $0.givenUp = true }
            fireTimers()
        }

        /// Gives up (``giveUp()``), and returns the failure to throw.
        func failure(_ description: String) -> Failure {
            giveUp()
            return Failure(description)
        }

        /// Gives up on the test's behalf, and fails it, if it is still running after `after`: a
        /// gateway that never ends an unlock fails its test instead of hanging the suite. The bound
        /// is far beyond any passing test, whose waits for a command may take 50 s under stalls. It
        /// ends with the link.
        func failsafe(after: Duration = .seconds(300)) {
            Task { [weak self] in
                try await Task.sleep(for: after)
                guard let self else { return }
                Issue.record("the fake lock gave up after \(after): an unlock or activation never ended")
                self.giveUp()
            }
        }

        func waitForCommand(_ count: Int) async throws -> Command {
            do {
                try await Network.waitUntil("command \(count)", timeout: .seconds(5)) { self.commands.count >= count }
            } catch {
                giveUp()
                throw error
            }
            return commands[count - 1]
        }
    }

    let lock = LockID("lock-gateway")!
    let other = LockID("lock-other")!
    let key = Key128.random()

    /// A gateway whose locks `lock` and `other` are online. The timeout is long by default: the tests
    /// play the lock in real time, and in the suite's first seconds, which load both cores, a nonce
    /// came 1.8 s late to an unlock of 2 s, which no longer answered it. Tests of the timeout itself
    /// give their own.
    func gateway(
        timeout: Duration = .seconds(10), metrics: ServerMetrics = ServerMetrics(), messagesPerLockPerMinute: Int = 600,
        accountGrace: Duration = .seconds(10)
    ) -> (LockGateway, FakeLink) {
        let link = FakeLink()
        link.failsafe()
        let gateway = LockGateway(
            link: link, timeout: timeout, metrics: metrics, logger: Logger(label: "test"), clock: .system,
            messagesPerLockPerMinute: messagesPerLockPerMinute, accountGrace: accountGrace)
        for id in [lock, other] {
            gateway.handle(MQTTMessage(topic: Topics.status(id), payload: LockStatus(online: true, activated: true, firmware: "1.0.0").encoded()))
        }
        return (gateway, link)
    }

    func answer(_ gateway: LockGateway, from id: LockID, _ event: Event) {
        gateway.handle(MQTTMessage(topic: Topics.event(id), payload: event.encoded()))
    }

    @Test func anUnlockRunsChallengeRespondResultAndIgnoresOtherLocksAnswers() async throws {
        let (gateway, link) = gateway()
        async let outcome = gateway.unlock(lock, key: key)
        guard case .challenge(let req) = try await link.waitForCommand(1) else { throw link.failure("expected a challenge") }
        let nonce = Block128.random()
        // Another lock answering with the same req is ignored: it cannot speak for this one.
        answer(gateway, from: other, .nonce(req: req, nonce: .random()))
        answer(gateway, from: lock, .nonce(req: req, nonce: nonce))
        guard case .respond(let respondReq, let response) = try await link.waitForCommand(2) else { throw link.failure("expected a respond") }
        #expect(respondReq == req)
        #expect(response == AES128.encrypt(nonce, key: key))
        answer(gateway, from: other, .result(req: req, granted: false, reason: .badResponse))
        answer(gateway, from: lock, .result(req: req, granted: true, reason: nil))
        #expect(await outcome == .granted)
    }

    @Test func whatALockSendsUnaskedCountsAgainstItsBudgetAndItsAnswersDoNot() async throws {
        let metrics = ServerMetrics()
        // Each lock's online status, sent as the gateway was made, took one of its three.
        let (gateway, link) = gateway(metrics: metrics, messagesPerLockPerMinute: 3, accountGrace: .milliseconds(300))
        answer(gateway, from: lock, .state(.locked))
        answer(gateway, from: lock, .state(.locked))
        // The budget is spent, yet the answers the server asks for still count for nothing: unlocks go on.
        var finished: RequestID?
        for round in 0..<3 {
            async let outcome = gateway.unlock(lock, key: key)
            guard case .challenge(let req) = try await link.waitForCommand(2 * round + 1) else { throw link.failure("expected a challenge") }
            answer(gateway, from: lock, .nonce(req: req, nonce: .random()))
            guard case .respond = try await link.waitForCommand(2 * round + 2) else { throw link.failure("expected a respond") }
            answer(gateway, from: lock, .result(req: req, granted: true, reason: nil))
            #expect(await outcome == .granted)
            finished = req
        }
        #expect(Self.overBudget(metrics) == 0)

        // What it sends unasked is over the budget: relay states, answers to nothing (a finished
        // exchange's result again, a nonce of none), malformed events, statuses.
        answer(gateway, from: lock, .state(.unlocked))
        answer(gateway, from: lock, .result(req: try #require(finished), granted: true, reason: nil))
        answer(gateway, from: lock, .nonce(req: RequestID.random(), nonce: .random()))
        gateway.handle(MQTTMessage(topic: Topics.event(lock), payload: Array("junk".utf8)))
        let online = MQTTMessage(topic: Topics.status(lock), payload: LockStatus(online: true, activated: true, firmware: "1.0.0").encoded())
        gateway.brokerDisconnected(lock)
        gateway.handle(online)
        #expect(!gateway.isOnline(lock))  // the status was dropped
        // Another lock's budget is its own.
        answer(gateway, from: other, .state(.unlocked))
        gateway.handle(MQTTMessage(topic: Topics.status(other), payload: LockStatus(online: true, activated: true, firmware: "1.0.0").encoded()))
        #expect(gateway.isOnline(other))

        // Reported once for its five messages over the budget, with its account as it was then.
        let generation = gateway.accountGeneration(lock)
        let reported = Task { [floods = gateway.floods] in
            var reports: [LockGateway.FloodReport] = []
            for await report in floods { reports.append(report) }
            return reports
        }
        try await Task.sleep(for: .milliseconds(300))
        reported.cancel()
        #expect(await reported.value == [LockGateway.FloodReport(lock: lock, generation: generation)])
        #expect(Self.overBudget(metrics) == 5)

        // An admin's new password: another account. What the old one left queued arrives during the
        // grace and is not counted; after it, the new account has its full budget of three.
        gateway.passwordRenewed(lock)
        #expect(gateway.accountGeneration(lock) == generation + 1)
        for _ in 0..<10 { answer(gateway, from: lock, .state(.locked)) }
        gateway.handle(online)
        #expect(gateway.isOnline(lock))
        #expect(Self.overBudget(metrics) == 5)
        try await Task.sleep(for: .milliseconds(400))
        for _ in 0..<4 { answer(gateway, from: lock, .state(.locked)) }
        #expect(Self.overBudget(metrics) == 6)
    }

    /// `unlockit_mqtt_messages_over_budget_total`, 0 before the first.
    static func overBudget(_ metrics: ServerMetrics) -> Int {
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        let line = text.split(separator: "\n").first { $0.hasPrefix("unlockit_mqtt_messages_over_budget_total ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    @Test func aDuplicateNonceIsDroppedNotTakenForTheResult() async throws {
        let (gateway, link) = gateway()
        async let outcome = gateway.unlock(lock, key: key)
        guard case .challenge(let req) = try await link.waitForCommand(1) else { throw link.failure("expected a challenge") }
        let nonce = Block128.random()
        answer(gateway, from: lock, .nonce(req: req, nonce: nonce))
        _ = try await link.waitForCommand(2)
        // QoS 1 delivers the nonce again: the unlock neither ends as denied nor sends a second respond.
        answer(gateway, from: lock, .nonce(req: req, nonce: nonce))
        answer(gateway, from: lock, .result(req: req, granted: true, reason: nil))
        #expect(await outcome == .granted)
        #expect(link.commands.count == 2)
    }

    @Test func aResultBeforeTheNonceIsNotTakenForTheOutcome() async throws {
        let (gateway, link) = gateway()
        async let outcome = gateway.unlock(lock, key: key)
        guard case .challenge(let req) = try await link.waitForCommand(1) else { throw link.failure("expected a challenge") }
        // A grant answering the challenge itself: no respond was sent, so it is not the lock's answer.
        answer(gateway, from: lock, .result(req: req, granted: true, reason: nil))
        let nonce = Block128.random()
        answer(gateway, from: lock, .nonce(req: req, nonce: nonce))
        guard case .respond(_, let response) = try await link.waitForCommand(2) else { throw link.failure("expected a respond") }
        #expect(response == AES128.encrypt(nonce, key: key))
        answer(gateway, from: lock, .result(req: req, granted: false, reason: .badResponse))
        #expect(await outcome == .lockDenied)
    }

    @Test func aNonceTooCloseToTheDeadlineIsNotAnswered() async throws {
        let (gateway, link) = gateway(timeout: .milliseconds(500))
        async let outcome = gateway.unlock(lock, key: key)
        guard case .challenge(let req) = try await link.waitForCommand(1) else { throw link.failure("expected a challenge") }
        try await Task.sleep(for: .milliseconds(470))  // past the last tenth of the 500 ms
        answer(gateway, from: lock, .nonce(req: req, nonce: .random()))
        link.fireTimers()
        #expect(await outcome == .lockTimeout)
        #expect(link.commands.count == 1)  // no respond: the door cannot open after the timeout
    }

    @Test func aGrantAfterTheTimeoutIsReportedNotDropped() async throws {
        let metrics = ServerMetrics()
        let (gateway, link) = gateway(metrics: metrics)
        let reported = Mutex(0)

        // Timed out after the respond went out: the lock may still open, and says so.
        async let outcome = gateway.unlock(lock, key: key) { reported.withLock { $0 += 1 } }
        guard case .challenge(let req) = try await link.waitForCommand(1) else { throw link.failure("expected a challenge") }
        answer(gateway, from: lock, .nonce(req: req, nonce: .random()))
        _ = try await link.waitForCommand(2)
        link.fireTimers()
        #expect(await outcome == .lockTimeout)
        answer(gateway, from: other, .result(req: req, granted: true, reason: nil))  // not the lock that was asked
        #expect(reported.withLock { $0 } == 0)
        answer(gateway, from: lock, .result(req: req, granted: true, reason: nil))
        answer(gateway, from: lock, .result(req: req, granted: true, reason: nil))  // a duplicate delivery: one report
        #expect(reported.withLock { $0 } == 1)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(text.contains(#"unlockit_unlocks_total{outcome="granted_late"} 1"#), "\(text)")

        // A late denial opened nothing; a timeout before any respond cannot have opened anything.
        async let denied = gateway.unlock(lock, key: key) { reported.withLock { $0 += 1 } }
        guard case .challenge(let req2) = try await link.waitForCommand(3) else { throw link.failure("expected a challenge") }
        answer(gateway, from: lock, .nonce(req: req2, nonce: .random()))
        _ = try await link.waitForCommand(4)
        link.fireTimers()
        #expect(await denied == .lockTimeout)
        answer(gateway, from: lock, .result(req: req2, granted: false, reason: .expired))
        async let silent = gateway.unlock(lock, key: key) { reported.withLock { $0 += 1 } }
        guard case .challenge(let req3) = try await link.waitForCommand(5) else { throw link.failure("expected a challenge") }
        link.fireTimers()
        #expect(await silent == .lockTimeout)
        answer(gateway, from: lock, .result(req: req3, granted: true, reason: nil))
        #expect(reported.withLock { $0 } == 1)

        // The watch ends: after its window a result is only counted as unexpected.
        async let forgotten = gateway.unlock(lock, key: key) { reported.withLock { $0 += 1 } }
        guard case .challenge(let req4) = try await link.waitForCommand(6) else { throw link.failure("expected a challenge") }
        answer(gateway, from: lock, .nonce(req: req4, nonce: .random()))
        _ = try await link.waitForCommand(7)
        link.fireTimers()
        #expect(await forgotten == .lockTimeout)
        #expect(link.scheduledDelays == [LockGateway.lateGrantWindow])
        link.fireTimers()
        answer(gateway, from: lock, .result(req: req4, granted: true, reason: nil))
        #expect(reported.withLock { $0 } == 1)
    }

    @Test func aGrantAfterTheLockWasReportedOfflineIsReportedToo() async throws {
        let (gateway, link) = gateway(timeout: .seconds(10))
        let reported = Mutex(0)
        // The respond is out when the broker disconnects the lock (a new password): the door may
        // have opened, and its result can still come in.
        async let outcome = gateway.unlock(lock, key: key) { reported.withLock { $0 += 1 } }
        guard case .challenge(let req) = try await link.waitForCommand(1) else { throw link.failure("expected a challenge") }
        answer(gateway, from: lock, .nonce(req: req, nonce: .random()))
        _ = try await link.waitForCommand(2)
        gateway.brokerDisconnected(lock)
        #expect(await outcome == .lockOffline)
        answer(gateway, from: lock, .result(req: req, granted: true, reason: nil))
        #expect(reported.withLock { $0 } == 1)

        // Offline before any respond: nothing can have opened, nothing is watched for.
        gateway.handle(MQTTMessage(topic: Topics.status(other), payload: LockStatus(online: true, activated: true).encoded()))
        async let early = gateway.unlock(other, key: key) { reported.withLock { $0 += 1 } }
        guard case .challenge(let req2) = try await link.waitForCommand(3) else { throw link.failure("expected a challenge") }
        gateway.handle(MQTTMessage(topic: Topics.status(other), payload: LockStatus(online: false).encoded()))
        #expect(await early == .lockOffline)
        answer(gateway, from: other, .result(req: req2, granted: true, reason: nil))
        #expect(reported.withLock { $0 } == 1)
    }

    @Test func aSilentLockTimesOutAndAnOfflineLockIsNotAsked() async throws {
        let (gateway, link) = gateway(timeout: .milliseconds(300))
        async let outcome = gateway.unlock(lock, key: key)
        _ = try await link.waitForCommand(1)
        // The wait is bounded by the configured timeout; when it passes the unlock ends.
        let delays = link.scheduledDelays
        #expect(delays.count == 1 && delays.allSatisfy { $0 <= .milliseconds(300) }, "\(delays)")
        link.fireTimers()
        #expect(await outcome == .lockTimeout)

        gateway.handle(MQTTMessage(topic: Topics.status(lock), payload: LockStatus(online: false).encoded()))
        let before = link.commands.count
        #expect(await gateway.unlock(lock, key: key) == .lockOffline)
        #expect(link.commands.count == before)
    }

    @Test func theLastWillEndsAWaitingUnlockAtOnce() async throws {
        let (gateway, link) = gateway(timeout: .seconds(10))
        async let outcome = gateway.unlock(lock, key: key)
        _ = try await link.waitForCommand(1)
        gateway.handle(MQTTMessage(topic: Topics.status(lock), payload: LockStatus(online: false).encoded()))
        #expect(await outcome == .lockOffline)
    }

    @Test func anyEventFromAKnownLockIsASightingAndAnUnknownLockGetsNoPresence() async throws {
        let (gateway, _) = gateway()
        let before = try #require(gateway.presence(of: lock))
        try await Task.sleep(for: .milliseconds(20))
        // Even one the gateway cannot read: the lock is there.
        gateway.handle(MQTTMessage(topic: Topics.event(lock), payload: Array("not json".utf8)))
        let after = try #require(gateway.presence(of: lock))
        #expect(after.lastSeen > before.lastSeen && after.online && after.firmwareVersion == before.firmwareVersion)
        #expect(gateway.presence(of: other)?.lastSeen ?? .distantFuture < after.lastSeen)
        let unseen = LockID("lock-never-seen")!
        answer(gateway, from: unseen, .nonce(req: RequestID.random(), nonce: .random()))
        #expect(gateway.presence(of: unseen) == nil)
    }

    @Test func aLockTheBrokerDisconnectedIsOfflineAndNothingIsMadeUpForOthers() async throws {
        let (gateway, _) = gateway(timeout: .seconds(10))
        let seen = try #require(gateway.presence(of: lock)?.lastSeen)
        async let outcome = gateway.unlock(lock, key: key)
        try await Task.sleep(for: .milliseconds(20))
        // An online lock: offline from now (it was there until now), and its waiting unlock ends.
        gateway.brokerDisconnected(lock)
        #expect(await outcome == .lockOffline)
        let after = try #require(gateway.presence(of: lock))
        #expect(!after.online && after.lastSeen > seen)
        // An offline lock keeps when it was last seen.
        gateway.brokerDisconnected(lock)
        #expect(gateway.presence(of: lock)?.lastSeen == after.lastSeen)
        // A lock never heard from (a registration whose answer was lost) gets no presence at all.
        let unseen = LockID("lock-never-seen")!
        gateway.brokerDisconnected(unseen)
        #expect(gateway.presence(of: unseen) == nil)
        #expect(await gateway.unlock(unseen, key: key) == .lockOffline)
    }

    @Test("The broker's disconnection writes the will's offline status; a retirement clears the status")
    func retainedStatusAfterTheBrokerDisconnects() async throws {
        let metrics = ServerMetrics()
        let (gateway, link) = gateway(timeout: .seconds(10), metrics: metrics)
        #expect(link.retained.isEmpty)
        gateway.brokerDisconnected(lock)
        let written = try #require(link.retained.last)
        #expect(written.topic == Topics.status(lock) && written.qos == .atMostOnce)
        #expect(try LockStatus.decode(written.payload) == LockStatus(online: false))

        async let outcome = gateway.unlock(other, key: key)
        _ = try await link.waitForCommand(1)
        gateway.retired(other)
        #expect(await outcome == .lockOffline)
        let cleared = try #require(link.retained.last)
        #expect(cleared.topic == Topics.status(other) && cleared.payload.isEmpty && cleared.qos == .atMostOnce)
        #expect(link.retained.count == 2)
        // Nothing of the retired lock's presence is kept, nor left to write: the other lock's stays.
        #expect(gateway.presence(of: other) == nil)
        #expect(gateway.takePresenceChanges().map(\.lock) == [lock])
        #expect(gateway.presence(of: lock)?.online == false)
        #expect(String(decoding: metrics.exposition(), as: UTF8.self).contains("unlockit_locks_online 0"))
    }

    @Test func theLastWillEndsAnUnlockWaitingForItsTurnAtOnceToo() async throws {
        let (gateway, link) = gateway(timeout: .seconds(10))
        async let first = gateway.unlock(lock, key: key)
        _ = try await link.waitForCommand(1)
        async let second = gateway.unlock(lock, key: key)
        try await Task.sleep(for: .milliseconds(50))
        gateway.handle(MQTTMessage(topic: Topics.status(lock), payload: LockStatus(online: false).encoded()))
        #expect(await first == .lockOffline)
        // The one behind it does not ask a lock that is gone and wait out its timeout.
        #expect(await second == .lockOffline)
        #expect(link.commands.count == 1)
    }

    @Test func theNextUnlockOfALockAsksAsSoonAsThePreviousRespondIsSent() async throws {
        let (gateway, link) = gateway()
        // Even when handing the respond over is slow, the next challenge does not overtake it.
        link.respondDelay.withLock { $0 = 0.1 }
        async let first = gateway.unlock(lock, key: key)
        guard case .challenge(let req1) = try await link.waitForCommand(1) else { throw link.failure("expected a challenge") }
        async let second = gateway.unlock(lock, key: key)
        try await Task.sleep(for: .milliseconds(100))
        // The lock keeps one pending challenge: the second waits while the first's is pending.
        #expect(link.commands.count == 1)
        answer(gateway, from: lock, .nonce(req: req1, nonce: .random()))
        // The first's respond goes out, and right behind it (the same topic, so in this order at
        // the lock) the second's challenge, before the first's result has come back.
        guard case .respond(let respondReq, _) = try await link.waitForCommand(2) else { throw link.failure("expected the first respond") }
        #expect(respondReq == req1)
        guard case .challenge(let req2) = try await link.waitForCommand(3) else { throw link.failure("expected the second challenge") }
        #expect(req2 != req1)
        answer(gateway, from: lock, .result(req: req1, granted: true, reason: nil))
        #expect(await first == .granted)
        answer(gateway, from: lock, .nonce(req: req2, nonce: .random()))
        guard case .respond(let respondReq2, _) = try await link.waitForCommand(4) else { throw link.failure("expected the second respond") }
        #expect(respondReq2 == req2)
        answer(gateway, from: lock, .result(req: req2, granted: false, reason: .badResponse))
        #expect(await second == .lockDenied)
        #expect(link.commands.count == 4)
    }

    @Test func anUnlockThatNeverRespondsPassesTheLockOnWhenItEnds() async throws {
        let (gateway, link) = gateway()
        async let first = gateway.unlock(lock, key: key)
        guard case .challenge(let req1) = try await link.waitForCommand(1) else { throw link.failure("expected a challenge") }
        async let second = gateway.unlock(lock, key: key)
        try await Task.sleep(for: .milliseconds(100))
        #expect(link.commands.count == 1)
        // No nonce: the first times out, and only then does the second ask.
        link.fireTimers()
        #expect(await first == .lockTimeout)
        guard case .challenge(let req2) = try await link.waitForCommand(2) else { throw link.failure("expected the second challenge") }
        #expect(req2 != req1)
        // A late nonce for the first is not answered: its wait is over.
        answer(gateway, from: lock, .nonce(req: req1, nonce: .random()))
        answer(gateway, from: lock, .nonce(req: req2, nonce: .random()))
        guard case .respond(let respondReq, _) = try await link.waitForCommand(3) else { throw link.failure("expected a respond") }
        #expect(respondReq == req2)
        answer(gateway, from: lock, .result(req: req2, granted: true, reason: nil))
        #expect(await second == .granted)
        #expect(link.commands.count == 3)
    }

    @Test func aWrongSetupCodeStopsActivationBeforeAnyChallenge() async throws {
        let (gateway, link) = gateway()
        let code = SetupCode.random()
        let activation = Task {
            try await gateway.activate(lock, setupCode: .random(), pending: { nil }) { _ in Issue.record("a key of the wrong code was held") }
        }
        guard case .activate(let req) = try await link.waitForCommand(1) else { throw link.failure("expected activate") }
        let (wrapped, kcv) = KeyWrap.wrap(key, setupCode: code, lock: lock)
        answer(gateway, from: lock, .activated(req: req, wrappedKey: wrapped, kcv: kcv))
        await #expect(throws: ActivationFailure.setupCodeMismatch) { _ = try await activation.value }
        #expect(link.commands.count == 1)
    }

    @Test func aPairingWindowThatClosesBeforeTheChallengeAsksForTheButtonAgain() async throws {
        let (gateway, link) = gateway()
        let code = SetupCode.random()
        let activation = Task { try await gateway.activate(lock, setupCode: code, pending: { nil }) { _ in } }
        guard case .activate(let req) = try await link.waitForCommand(1) else { throw link.failure("expected activate") }
        let (wrapped, kcv) = KeyWrap.wrap(key, setupCode: code, lock: lock)
        answer(gateway, from: lock, .activated(req: req, wrappedKey: wrapped, kcv: kcv))
        guard case .challenge(let challenge) = try await link.waitForCommand(2) else { throw link.failure("expected a challenge") }
        // The window closed in between: a lock that is not activated takes no challenge outside it.
        answer(gateway, from: lock, .error(req: challenge, reason: .notActivated))
        await #expect(throws: ActivationFailure.notInPairingMode) { _ = try await activation.value }
        #expect(link.commands.count == 2)
    }

    @Test func aConfirmationWhoseAnswerWasLostIsFinishedByTheNextAttempt() async throws {
        let (gateway, link) = gateway()
        let code = SetupCode.random()
        let held = Mutex<PendingPairing?>(nil)
        let first = Task {
            try await gateway.activate(lock, setupCode: code, pending: { nil }) { pairing in held.withLock { $0 = pairing } }
        }
        guard case .activate(let req) = try await link.waitForCommand(1) else { throw link.failure("expected activate") }
        let (wrapped, kcv) = KeyWrap.wrap(key, setupCode: code, lock: lock)
        answer(gateway, from: lock, .activated(req: req, wrappedKey: wrapped, kcv: kcv))
        guard case .challenge(let challenge) = try await link.waitForCommand(2) else { throw link.failure("expected a challenge") }
        // The key is held before the lock can be asked to commit.
        #expect(held.withLock { $0?.key.bytes } == key.bytes)
        answer(gateway, from: lock, .nonce(req: challenge, nonce: .random()))
        guard case .confirm = try await link.waitForCommand(3) else { throw link.failure("expected a confirm") }
        // The lock commits, but its result never arrives.
        link.fireTimers()
        await #expect(throws: ActivationFailure.lockTimeout) { _ = try await first.value }

        let pending = try #require(held.withLock { $0 })
        let second = Task {
            try await gateway.activate(lock, setupCode: code, pending: { pending }) { _ in Issue.record("nothing new to hold") }
        }
        guard case .activate(let again) = try await link.waitForCommand(4) else { throw link.failure("expected activate") }
        answer(gateway, from: lock, .error(req: again, reason: .alreadyActivated))
        guard case .challenge(let proof) = try await link.waitForCommand(5) else { throw link.failure("expected a challenge") }
        let nonce = Block128.random()
        answer(gateway, from: lock, .nonce(req: proof, nonce: nonce))
        guard case .confirm(let confirmReq, let response) = try await link.waitForCommand(6) else { throw link.failure("expected a confirm") }
        #expect(confirmReq == proof)
        // The confirmation's proof, under the key derived for it: not a proof that would open the door.
        #expect(response == AES128.encrypt(nonce, key: Key128(AES128.encrypt(Block128(Array("unlockit-confirm".utf8))!, key: key).bytes)!))
        #expect(response != AES128.encrypt(nonce, key: key))
        answer(gateway, from: lock, .result(req: proof, granted: true, reason: nil))
        #expect(try await second.value.bytes == key.bytes)
    }

    @Test func anAttemptWaitingBehindAnotherFinishesWithTheKeyThatOneHeld() async throws {
        let (gateway, link) = gateway()
        let code = SetupCode.random()
        // Shared by both attempts, as the store is: one holds into it, the other reads from it.
        final class Store: Sendable { let held = Mutex<PendingPairing?>(nil) }
        let store = Store()
        let first = Task {
            try await gateway.activate(lock, setupCode: code, pending: { nil }) { pairing in store.held.withLock { $0 = pairing } }
        }
        guard case .activate(let req) = try await link.waitForCommand(1) else { throw link.failure("expected activate") }
        // A second attempt arrives before the first has held anything, and waits for its turn.
        let second = Task {
            try await gateway.activate(lock, setupCode: code, pending: { store.held.withLock { $0 } }) { _ in Issue.record("nothing new to hold") }
        }
        try await Task.sleep(for: .milliseconds(50))
        let (wrapped, kcv) = KeyWrap.wrap(key, setupCode: code, lock: lock)
        answer(gateway, from: lock, .activated(req: req, wrappedKey: wrapped, kcv: kcv))
        guard case .challenge(let challenge) = try await link.waitForCommand(2) else { throw link.failure("expected a challenge") }
        answer(gateway, from: lock, .nonce(req: challenge, nonce: .random()))
        guard case .confirm = try await link.waitForCommand(3) else { throw link.failure("expected a confirm") }
        // The lock commits, but the first attempt's result never arrives.
        link.fireTimers()
        await #expect(throws: ActivationFailure.lockTimeout) { _ = try await first.value }

        // The second, now with the turn, finds the lock activated and proves it holds the first's key.
        guard case .activate(let again) = try await link.waitForCommand(4) else { throw link.failure("expected activate") }
        answer(gateway, from: lock, .error(req: again, reason: .alreadyActivated))
        guard case .challenge(let proof) = try await link.waitForCommand(5) else { throw link.failure("expected a challenge") }
        let nonce = Block128.random()
        answer(gateway, from: lock, .nonce(req: proof, nonce: nonce))
        guard case .confirm(_, let response) = try await link.waitForCommand(6) else { throw link.failure("expected a confirm") }
        #expect(response == ChallengeResponse.confirmation(nonce: nonce, key: key))
        answer(gateway, from: lock, .result(req: proof, granted: true, reason: nil))
        #expect(try await second.value.bytes == key.bytes)
    }

    @Test func finishingAnEarlierAttemptNeedsItsSetupCodeAndALockHoldingItsKey() async throws {
        let (gateway, link) = gateway()
        let code = SetupCode.random()
        let pending = PendingPairing(key: key, wrappedKey: KeyWrap.wrap(key, setupCode: code, lock: lock).wrappedKey)
        func attempt(_ code: SetupCode, pending: PendingPairing?) -> Task<Key128, any Error> {
            Task { try await gateway.activate(lock, setupCode: code, pending: { pending }) { _ in Issue.record("nothing to hold") } }
        }

        // Another code: refused before anything is asked of the lock.
        let wrongCode = attempt(.random(), pending: pending)
        guard case .activate(let req1) = try await link.waitForCommand(1) else { throw link.failure("expected activate") }
        answer(gateway, from: lock, .error(req: req1, reason: .alreadyActivated))
        await #expect(throws: ActivationFailure.setupCodeMismatch) { _ = try await wrongCode.value }
        #expect(link.commands.count == 1)

        // Nothing pending: an activated lock stays what it is.
        let nothing = attempt(code, pending: nil)
        guard case .activate(let req2) = try await link.waitForCommand(2) else { throw link.failure("expected activate") }
        answer(gateway, from: lock, .error(req: req2, reason: .alreadyActivated))
        await #expect(throws: ActivationFailure.alreadyActivated) { _ = try await nothing.value }
        #expect(link.commands.count == 2)

        // The lock refuses the proof (it was activated with another key): still already activated.
        let otherKey = attempt(code, pending: pending)
        guard case .activate(let req3) = try await link.waitForCommand(3) else { throw link.failure("expected activate") }
        answer(gateway, from: lock, .error(req: req3, reason: .alreadyActivated))
        guard case .challenge(let proof) = try await link.waitForCommand(4) else { throw link.failure("expected a challenge") }
        answer(gateway, from: lock, .nonce(req: proof, nonce: .random()))
        _ = try await link.waitForCommand(5)
        answer(gateway, from: lock, .result(req: proof, granted: false, reason: .badResponse))
        await #expect(throws: ActivationFailure.alreadyActivated) { _ = try await otherKey.value }
    }

    @Test func aProofThatReachedTheLockTooLateIsATimeoutNotAnotherKey() async throws {
        let (gateway, link) = gateway()
        let code = SetupCode.random()
        let pending = PendingPairing(key: key, wrappedKey: KeyWrap.wrap(key, setupCode: code, lock: lock).wrappedKey)
        var sent = 0
        /// Resumes a pairing on an activated lock, which refuses the proof for `reason`.
        func resume(refusedFor reason: DenialReason) async throws -> Task<Key128, any Error> {
            let attempt = Task { try await gateway.activate(lock, setupCode: code, pending: { pending }) { _ in Issue.record("nothing to hold") } }
            sent += 1
            guard case .activate(let req) = try await link.waitForCommand(sent) else { throw link.failure("expected activate") }
            answer(gateway, from: lock, .error(req: req, reason: .alreadyActivated))
            sent += 1
            guard case .challenge(let proof) = try await link.waitForCommand(sent) else { throw link.failure("expected a challenge") }
            answer(gateway, from: lock, .nonce(req: proof, nonce: .random()))
            sent += 1
            guard case .confirm = try await link.waitForCommand(sent) else { throw link.failure("expected a confirm") }
            answer(gateway, from: lock, .result(req: proof, granted: false, reason: reason))
            return attempt
        }

        // The lock's challenge lapsed before the proof arrived: says nothing about the lock's key.
        let late = try await resume(refusedFor: .expired)
        await #expect(throws: ActivationFailure.lockTimeout) { _ = try await late.value }
        // The lock had lost the challenge (it reconnected in between): nor does this.
        let forgotten = try await resume(refusedFor: .noPendingChallenge)
        await #expect(throws: ActivationFailure.lockDenied) { _ = try await forgotten.value }

        // A first pairing whose proof arrived too late: also a timeout, and the next attempt can finish.
        let fresh = Task { try await gateway.activate(lock, setupCode: code, pending: { nil }) { _ in } }
        sent += 1
        guard case .activate(let req) = try await link.waitForCommand(sent) else { throw link.failure("expected activate") }
        let (wrapped, kcv) = KeyWrap.wrap(key, setupCode: code, lock: lock)
        answer(gateway, from: lock, .activated(req: req, wrappedKey: wrapped, kcv: kcv))
        sent += 1
        guard case .challenge(let challenge) = try await link.waitForCommand(sent) else { throw link.failure("expected a challenge") }
        answer(gateway, from: lock, .nonce(req: challenge, nonce: .random()))
        sent += 1
        guard case .confirm = try await link.waitForCommand(sent) else { throw link.failure("expected a confirm") }
        answer(gateway, from: lock, .result(req: challenge, granted: false, reason: .expired))
        await #expect(throws: ActivationFailure.lockTimeout) { _ = try await fresh.value }
    }

    @Test func nothingIsSentBeforeTheServersBrokerRoleIsInPlace() async throws {
        let link = FakeLink()
        let gateway = LockGateway(
            link: link, timeout: .seconds(1), metrics: ServerMetrics(), logger: Logger(label: "test"), clock: .system, isReady: { false })
        gateway.handle(MQTTMessage(topic: Topics.status(lock), payload: LockStatus(online: true, activated: true, firmware: "1.0.0").encoded()))
        #expect(await gateway.unlock(lock, key: key) == .brokerUnavailable)
        await #expect(throws: ActivationFailure.brokerUnavailable) {
            _ = try await gateway.activate(lock, setupCode: SetupCode.random(), pending: { nil }, hold: { _ in })
        }
        #expect(link.commands.isEmpty)
    }

    @Test("Presence is dated by the server's clock, the one locks are registered by")
    func presenceFollowsTheServersClock() {
        let clock = TestClock()
        let gateway = LockGateway(
            link: FakeLink(), timeout: .seconds(1), metrics: ServerMetrics(), logger: Logger(label: "test"), clock: clock.serverClock)
        gateway.handle(MQTTMessage(topic: Topics.status(lock), payload: LockStatus(online: true, activated: true).encoded()))
        #expect(gateway.presence(of: lock)?.lastSeen == clock.now)
        clock.advance(60)
        answer(gateway, from: lock, .state(.locked))
        #expect(gateway.takePresenceChanges().map(\.lastSeen) == [clock.now])
        clock.advance(60)
        gateway.brokerDisconnected(lock)
        #expect(gateway.presence(of: lock)?.lastSeen == clock.now && gateway.presence(of: lock)?.online == false)
    }

    @Test func malformedEventsAreCountedAndDropped() async throws {
        let metrics = ServerMetrics()
        let gateway = LockGateway(link: FakeLink(), timeout: .seconds(1), metrics: metrics, logger: Logger(label: "test"), clock: .system)
        for payload in ["{", "[]", #"{"v":1,"op":"nonce","req":"x","nonce":"00"}"#] {
            gateway.handle(MQTTMessage(topic: Topics.event(lock), payload: Array(payload.utf8)))
        }
        gateway.handle(MQTTMessage(topic: Topics.status(lock), payload: Array("online".utf8)))
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(text.contains("unlockit_mqtt_malformed_messages_total 4"))
    }

    @Test func aLockThatFlipsItsStatusOverAndOverWritesTenLinesAMinuteAndTheGaugeFollowsEveryFlip() {
        let lines = LazyMetadataLogHandlerTests.Capture()
        let metrics = ServerMetrics()
        let logger = Logger(label: "test") { StreamLogHandler(label: $0, stream: lines, metadataProvider: nil) }
        let gateway = LockGateway(link: FakeLink(), timeout: .seconds(1), metrics: metrics, logger: logger, clock: .system)
        for flip in 0..<101 {
            gateway.handle(MQTTMessage(topic: Topics.status(lock), payload: LockStatus(online: flip % 2 == 0, activated: true).encoded()))
        }
        gateway.handle(MQTTMessage(topic: Topics.status(other), payload: LockStatus(online: true, activated: true).encoded()))
        let ofLock = lines.written.filter { $0.contains("lock=\(lock)") }
        #expect(ofLock.count == 10, "\(ofLock)")
        #expect(ofLock.last?.contains("lock offline; its further changes this minute are not logged") == true, "\(ofLock)")
        // Another lock has a budget of its own.
        #expect(lines.written.filter { $0.contains("lock=\(other)") }.count == 1)
        #expect(String(decoding: metrics.exposition(), as: UTF8.self).contains("unlockit_locks_online 2"))
        // Registered anew, the lock starts afresh.
        gateway.registered(lock)
        gateway.handle(MQTTMessage(topic: Topics.status(lock), payload: LockStatus(online: true, activated: true).encoded()))
        #expect(lines.written.filter { $0.contains("lock=\(lock)") }.count == 11)
    }
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
