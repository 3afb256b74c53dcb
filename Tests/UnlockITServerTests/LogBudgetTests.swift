import Testing

@testable import UnlockITServer

@Suite struct LogBudgetTests {
    let t0 = ContinuousClock.now

    @Test func aKeyWritesItsBudgetThenCountsWhatItDoesNotWriteUntilItsMinuteEnds() {
        let budget = LogBudget<String>(perMinute: 3)
        #expect(budget.take("a", now: t0) == .init(unloggedBefore: 0, spendsTheBudget: false))
        #expect(budget.take("a", now: t0 + .seconds(1)) == .init(unloggedBefore: 0, spendsTheBudget: false))
        #expect(budget.take("a", now: t0 + .seconds(2)) == .init(unloggedBefore: 0, spendsTheBudget: true))
        for second in 3..<10 { #expect(budget.take("a", now: t0 + .seconds(second)) == nil) }
        // Another key has a budget of its own.
        #expect(budget.take("b", now: t0 + .seconds(10)) == .init(unloggedBefore: 0, spendsTheBudget: false))
        #expect(budget.take("a", now: t0 + .seconds(59)) == nil)
        // The minute is over: the next line says how many were not written.
        #expect(budget.take("a", now: t0 + .seconds(60)) == .init(unloggedBefore: 8, spendsTheBudget: false))
        #expect(budget.take("a", now: t0 + .seconds(61)) == .init(unloggedBefore: 0, spendsTheBudget: false))
    }

    @Test func aForgottenKeyStartsAfresh() {
        let budget = LogBudget<String>(perMinute: 1)
        #expect(budget.take("a", now: t0) == .init(unloggedBefore: 0, spendsTheBudget: true))
        #expect(budget.take("a", now: t0) == nil)
        budget.forget("a")
        #expect(budget.take("a", now: t0) == .init(unloggedBefore: 0, spendsTheBudget: true))
    }
}
