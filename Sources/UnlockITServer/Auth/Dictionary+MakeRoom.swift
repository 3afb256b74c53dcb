extension Dictionary {
    /// Makes room in a table bounded at `capacity`, for a tenth of it at once, so that a spray of
    /// new keys costs one sweep per that many keys, not one per key: the entries `isWorthless`
    /// picks go first (they tell the limiter nothing a new entry would not), then, while more than
    /// nine tenths remain, those `goesFirst` orders first. An entry `isPinned` picks stays.
    ///
    /// The limiters call it when a new key arrives and the table holds `capacity` keys.
    mutating func makeRoom(
        capacity: Int,
        dropping isWorthless: (Value) -> Bool = { _ in false },
        keeping isPinned: (Value) -> Bool = { _ in false },
        goesFirst: (Value, Value) -> Bool
    ) {
        let target = capacity - Swift.max(1, capacity / 10)
        self = filter { isPinned($0.value) || !isWorthless($0.value) }
        guard count > target else { return }
        let candidates = filter { !isPinned($0.value) }.sorted { goesFirst($0.value, $1.value) }
        for (key, _) in candidates.prefix(count - target) { self[key] = nil }
    }
}
