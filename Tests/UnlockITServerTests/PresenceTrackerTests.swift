import Foundation
import Testing
import UnlockITCore

@testable import UnlockITServer

@Suite struct PresenceTrackerTests {
    @Test("The count of online locks follows every change as counting them would, without counting them")
    func theOnlineCountIsKeptAsTheLocksChange() throws {
        let tracker = PresenceTracker()
        let locks = try (0..<20).map { try #require(LockID("lock-\($0)")) }
        var random = SeededGenerator(seed: 2026)
        var model: [LockID: Bool] = [:]
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for step in 0..<5_000 {
            let lock = locks.randomElement(using: &random)!
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6:
                let online = Bool.random(using: &random)
                #expect(tracker.status(lock, online: online, firmware: nil, now: now) == (model[lock] != online), "step \(step)")
                model[lock] = online
            case 6, 7:
                #expect(tracker.disconnected(lock, now: now) == (model[lock] == true), "step \(step)")
                if model[lock] == true { model[lock] = false }
            case 8:
                tracker.forget(lock)
                model[lock] = nil
            default:
                if Int.random(in: 0..<20, using: &random) == 0 {
                    tracker.markAllOffline()
                    for (known, _) in model { model[known] = false }
                } else {
                    tracker.seen(lock, now: now)
                }
            }
            #expect(tracker.onlineCount == model.values.count(where: { $0 }), "step \(step)")
            #expect(tracker.isOnline(lock) == (model[lock] == true), "step \(step)")
        }
    }
}
