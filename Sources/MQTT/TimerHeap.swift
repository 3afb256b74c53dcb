/// Actions due at given instants, earliest first (a binary min-heap).
struct TimerHeap {
    struct Entry {
        let deadline: ContinuousClock.Instant
        let sequence: Int
        let action: @Sendable () -> Void
    }

    private var entries: [Entry] = []
    private var nextSequence = 0

    var isEmpty: Bool { entries.isEmpty }
    var earliest: ContinuousClock.Instant? { entries.first?.deadline }

    mutating func insert(_ deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) {
        nextSequence += 1
        entries.append(Entry(deadline: deadline, sequence: nextSequence, action: action))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns every action due at `now`, in deadline order.
    mutating func popDue(_ now: ContinuousClock.Instant) -> [@Sendable () -> Void] {
        var due: [@Sendable () -> Void] = []
        while !entries.isEmpty, entries[0].deadline <= now {
            due.append(entries[0].action)
            let last = entries.removeLast()
            guard !entries.isEmpty else { break }
            entries[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < entries.count, precedes(left, smallest) { smallest = left }
                if right < entries.count, precedes(right, smallest) { smallest = right }
                guard smallest != parent else { break }
                entries.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return due
    }

    /// Same deadline: first scheduled, first run. By index, so that comparing copies no closure.
    private func precedes(_ a: Int, _ b: Int) -> Bool {
        let (first, second) = (entries[a].deadline, entries[b].deadline)
        return first < second || (first == second && entries[a].sequence < entries[b].sequence)
    }
}
