import SiteHarness
import Testing

@testable import UnlockITServer

/// bcrypt's queue: bounded, and shared fairly between networks. One slot is held while the queue is
/// filled step by step, then let go: the order in which the waiters ran shows who got a turn.
@Suite struct AsyncLimiterTests {
    final class Queue: Sendable {
        let limiter: AsyncLimiter
        /// The requests that got a turn, in the order they got it.
        let served = LockedBox<[String]>([])
        /// Each finished request's answer: whether it got a turn.
        let answers = LockedBox<[String: Bool]>([:])
        private let release: AsyncStream<Void>.Continuation

        init(maxWaiting: Int) async throws {
            let limiter = AsyncLimiter(limit: 1, maxWaiting: maxWaiting)
            let (stream, release) = AsyncStream<Void>.makeStream()
            let holding = LockedBox(false)
            self.limiter = limiter
            self.release = release
            Task {
                try await limiter.run(network: "holder") {
                    holding.set(true)
                    for await _ in stream { break }
                }
            }
            try await Network.waitUntil("the holder to take the slot", timeout: .seconds(5)) { holding.get() }
        }

        /// Asks for the slot as `name` of `network`, and returns once the request waits in the queue
        /// (`waiting` waiters in all) or, with `waiting` nil, once something else happened: it was
        /// answered, or it took another's place (whose answer ``answer(_:)`` then tells).
        func ask(_ name: String, of network: String, queueing: Bool = false, waiting: Int? = nil) async throws {
            let before = answers.get().count
            Task { [limiter, served, answers] in
                let turn: Bool
                do {
                    try await limiter.run(network: network, queueing: queueing) { served.update { $0.append(name) } }
                    turn = true
                } catch {
                    turn = false
                }
                answers.update { $0[name] = turn }
            }
            if let waiting {
                try await Network.waitUntil("\(waiting) waiters", timeout: .seconds(5)) { limiter.waitingCount == waiting }
            } else {
                try await Network.waitUntil("an answer for \(name)", timeout: .seconds(5)) { answers.get().count > before }
            }
        }

        /// Whether `name` got a turn; nil while it waits.
        func answer(_ name: String) -> Bool? { answers.get()[name] }

        /// Lets the slot go; returns once `count` waiters have run, with the order they ran in.
        func drain(expecting count: Int) async throws -> [String] {
            release.yield()
            try await Network.waitUntil("\(count) waiters to run", timeout: .seconds(5)) { served.get().count >= count }
            return served.get()
        }
    }

    @Test("A network that fills the queue gives way to each network that asks, down to its share")
    func aFullQueueGivesWay() async throws {
        let queue = try await Queue(maxWaiting: 3)
        try await queue.ask("a1", of: "A", waiting: 1)
        try await queue.ask("a2", of: "A", waiting: 2)
        try await queue.ask("a3", of: "A", waiting: 3)
        // The queue is full: B's newcomer takes the place of A's newest.
        try await queue.ask("b1", of: "B")
        #expect(queue.answer("a3") == false && queue.answer("b1") == nil)
        // A holds two places and B one: not two more than B, so B's second is turned away.
        try await queue.ask("b2", of: "B")
        #expect(queue.answer("b2") == false && queue.answer("a2") == nil)
        // C holds none: A gives way again.
        try await queue.ask("c1", of: "C")
        #expect(queue.answer("a2") == false && queue.answer("c1") == nil)
        #expect(queue.limiter.waitingCount == 3)
        #expect(try await queue.drain(expecting: 3) == ["a1", "b1", "c1"])
    }

    @Test("Of the networks that hold two places more than the newcomer's, the one holding the most gives way")
    func theFullestNetworkGivesWay() async throws {
        let queue = try await Queue(maxWaiting: 8)
        var waiting = 0
        for (name, network) in [("a1", "A"), ("b1", "B"), ("a2", "A"), ("b2", "B"), ("a3", "A"), ("a4", "A"), ("c1", "C"), ("d1", "D")] {
            waiting += 1
            try await queue.ask(name, of: network, waiting: waiting)
        }
        // A holds four, B two, the newcomer's E none: both may give way, A does, with its newest.
        try await queue.ask("e1", of: "E")
        #expect(queue.answer("a4") == false)
        // A holds three, B two, E one: only A holds two more than E.
        try await queue.ask("e2", of: "E")
        #expect(queue.answer("a3") == false)
        // A, B and E hold two each: no one holds two more than E.
        try await queue.ask("e3", of: "E")
        #expect(queue.answer("e3") == false)
        // F holds none, and A, B and E two each: of those, E's waiter came last, so E gives way.
        try await queue.ask("f1", of: "F")
        #expect(queue.answer("e2") == false, "\(queue.answers.get())")
        #expect(try await queue.drain(expecting: 8) == ["a1", "b1", "c1", "d1", "e1", "f1", "a2", "b2"])
    }

    @Test("A network whose newest waiter may not be turned away gives way with its newest that may")
    func onlyEvictableWaitersGiveWay() async throws {
        let queue = try await Queue(maxWaiting: 2)
        try await queue.ask("a1", of: "A", waiting: 1)
        try await queue.ask("a2", of: "A", waiting: 2)
        try await queue.ask("i1", of: "A", queueing: true, waiting: 3)
        #expect(queue.limiter.placesTaken == 2)
        try await queue.ask("b1", of: "B")
        #expect(queue.answer("a2") == false && queue.answer("i1") == nil)
        #expect(try await queue.drain(expecting: 3) == ["a1", "b1", "i1"])
    }

    @Test("Networks that wait with as many places as each other do not push each other out")
    func equalSharesStay() async throws {
        let queue = try await Queue(maxWaiting: 2)
        try await queue.ask("a1", of: "A", waiting: 1)
        try await queue.ask("b1", of: "B", waiting: 2)
        try await queue.ask("c1", of: "C")
        try await queue.ask("a2", of: "A")
        #expect(queue.answer("c1") == false && queue.answer("a2") == false)
        #expect(try await queue.drain(expecting: 2) == ["a1", "b1"])
    }

    @Test("A free slot goes to the waiting networks in turn, each network's requests in arrival order")
    func roundRobin() async throws {
        let queue = try await Queue(maxWaiting: 10)
        for (index, (name, network)) in [("a1", "A"), ("a2", "A"), ("a3", "A"), ("b1", "B"), ("b2", "B"), ("c1", "C")].enumerated() {
            try await queue.ask(name, of: network, waiting: index + 1)
        }
        #expect(try await queue.drain(expecting: 6) == ["a1", "b1", "c1", "a2", "b2", "a3"])
    }

    @Test("Callers that wait even when the queue is full are never turned away, and keep no one else out")
    func queueingCallersStay() async throws {
        let queue = try await Queue(maxWaiting: 1)
        // However many imports wait, each with its next password, the queue's place is free for others.
        try await queue.ask("i1", of: "A", queueing: true, waiting: 1)
        try await queue.ask("i2", of: "A", queueing: true, waiting: 2)
        try await queue.ask("b1", of: "B", waiting: 3)
        #expect(queue.answer("b1") == nil)
        // The place is B's now: another newcomer is turned away (A holds no place to give), an import not.
        try await queue.ask("b2", of: "B")
        #expect(queue.answer("b2") == false)
        try await queue.ask("i3", of: "A", queueing: true, waiting: 4)
        #expect(queue.limiter.placesTaken == 1)
        // The imports take their network's turns, as its other requests would.
        #expect(try await queue.drain(expecting: 4) == ["i1", "b1", "i2", "i3"])
    }
}
