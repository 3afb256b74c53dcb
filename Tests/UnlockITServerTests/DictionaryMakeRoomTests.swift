import Testing

@testable import UnlockITServer

/// The sweep every bounded limiter table shares.
@Suite struct DictionaryMakeRoomTests {
    /// Twenty entries, a value each from 0 to 19.
    private func table() -> [String: Int] { Dictionary(uniqueKeysWithValues: (0..<20).map { ("k\($0)", $0) }) }

    @Test func worthlessEntriesGoFirstAndAloneWhenThatIsEnough() {
        var entries = table()
        entries.makeRoom(capacity: 20, dropping: { $0 % 4 == 0 }, rank: { $0 }, goesFirst: <)
        // Five worthless ones leave fifteen, under nine tenths of twenty: nothing else goes.
        #expect(entries.count == 15)
        #expect(entries.values.allSatisfy { $0 % 4 != 0 })
    }

    @Test func thenTheOrderDecidesDownToNineTenths() {
        var entries = table()
        entries.makeRoom(capacity: 20, dropping: { $0 == 7 }, rank: { $0 }, goesFirst: <)
        #expect(entries.count == 18)
        #expect(Set(entries.values) == Set(0..<20).subtracting([0, 7]))
    }

    @Test func aTenthGoesAtOnceWhateverTheCapacity() {
        var entries = table()
        entries.makeRoom(capacity: 20, rank: { $0 }, goesFirst: >)
        #expect(Set(entries.values) == Set(0..<18))
        // A capacity under ten still makes room for one.
        var small = ["a": 1, "b": 2, "c": 3]
        small.makeRoom(capacity: 3, rank: { $0 }, goesFirst: <)
        #expect(small == ["b": 2, "c": 3])
    }

    @Test func pinnedEntriesStayEvenWhenWorthlessOrFirstInLine() {
        var entries = table()
        entries.makeRoom(capacity: 20, dropping: { $0 == 0 }, keeping: { $0 < 3 }, rank: { $0 }, goesFirst: <)
        // 0 is worthless but pinned, 1 and 2 first in line but pinned: 3 and 4 go instead.
        #expect(Set(entries.values) == Set(0..<20).subtracting([3, 4]))
        // Everything pinned: nothing goes, and the table may stay over its capacity.
        var pinned = table()
        pinned.makeRoom(capacity: 10, keeping: { _ in true }, rank: { $0 }, goesFirst: <)
        #expect(pinned.count == 20)
    }
}
