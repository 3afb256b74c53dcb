/// Clients waiting to connect again, earliest deadline first: a binary min-heap, so that the loop
/// finds the attempts due without looking at every client (a fleet has ten thousand).
///
/// An entry stays when its client leaves the wait some other way (a shutdown, a newer deadline):
/// whoever takes it checks that the client still waits for that deadline.
struct RetryQueue {
    private var heap: [(deadline: ContinuousClock.Instant, core: ClientCore)] = []

    var earliest: ContinuousClock.Instant? { heap.first?.deadline }

    mutating func insert(_ deadline: ContinuousClock.Instant, _ core: ClientCore) {
        heap.append((deadline, core))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the entries due at `now`, earliest first.
    mutating func popDue(_ now: ContinuousClock.Instant) -> [(deadline: ContinuousClock.Instant, core: ClientCore)] {
        var due: [(deadline: ContinuousClock.Instant, core: ClientCore)] = []
        while let first = heap.first, first.deadline <= now {
            due.append(first)
            heap.swapAt(0, heap.count - 1)
            heap.removeLast()
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
                if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
                guard smallest != parent else { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return due
    }
}
