extension Dictionary {
    /// Makes room in a table bounded at `capacity`, for a tenth of it at once, so that a spray of
    /// new keys costs one sweep per that many keys, not one per key: the entries `isWorthless`
    /// picks go first (they tell the limiter nothing a new entry would not), then, while more than
    /// nine tenths remain, those first in the order of their `rank` by `goesFirst`. An entry
    /// `isPinned` picks stays; while pinned entries fill nine tenths of the table, nothing more can go
    /// and every new key sweeps again (the limiters pin only checks in flight, which are few).
    ///
    /// The limiters call it, under their lock, when a new key arrives and the table holds
    /// `capacity` keys. Each entry's rank is worked out once.
    mutating func makeRoom<Rank>(
        capacity: Int,
        dropping isWorthless: (Value) -> Bool = { _ in false },
        keeping isPinned: (Value) -> Bool = { _ in false },
        rank: (Value) -> Rank,
        goesFirst: (Rank, Rank) -> Bool
    ) {
        let target = capacity - Swift.max(1, capacity / 10)
        for key in compactMap({ !isPinned($0.value) && isWorthless($0.value) ? $0.key : nil }) { self[key] = nil }
        guard count > target else { return }
        let candidates = compactMap { isPinned($0.value) ? nil : ($0.key, rank($0.value)) }.sorted { goesFirst($0.1, $1.1) }
        for (key, _) in candidates.prefix(count - target) { self[key] = nil }
    }
}
