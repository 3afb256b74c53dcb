/// The event loop's timers: actions due at given instants.
typealias TimerHeap = DeadlineQueue<@Sendable () -> Void>

/// Values due at given instants, earliest first: the loop's timers, and its clients waiting to
/// connect again.
///
/// Most timers arrive in deadline order: every unlock's timeout is the same length after its
/// start. Those queue in a run that is appended to and taken from its front, each in constant
/// time; only a timer due before the run's last one goes into a binary min-heap. With the heap
/// alone, taking 8,000 timeouts a second from among the 24,000 pending cost ≈ 1 % of the
/// server's CPU in sifting (perf, `wrk -c64`).
struct DeadlineQueue<Value> {
    struct Entry {
        let deadline: ContinuousClock.Instant
        let sequence: Int
        /// Cleared when taken from the run, so that a fired closure is not kept alive.
        var action: Value?

        /// The order timers fire in: by deadline, and the same deadline first scheduled, first run.
        var order: (ContinuousClock.Instant, Int) { (deadline, sequence) }
    }

    private var heap: [Entry] = []
    /// Ordered by deadline, then sequence; the entries before `runStart` have been taken.
    private var run: [Entry] = []
    private var runStart = 0
    private var nextSequence = 0

    var isEmpty: Bool { heap.isEmpty && runStart == run.count }

    var earliest: ContinuousClock.Instant? {
        switch (heap.first?.deadline, runStart < run.count ? run[runStart].deadline : nil) {
        case (let fromHeap?, let fromRun?): min(fromHeap, fromRun)
        case (let fromHeap, let fromRun): fromHeap ?? fromRun
        }
    }

    mutating func insert(_ deadline: ContinuousClock.Instant, _ action: Value) {
        nextSequence += 1
        let entry = Entry(deadline: deadline, sequence: nextSequence, action: action)
        if runStart == run.count || run[run.count - 1].deadline <= deadline {
            run.append(entry)
            return
        }
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns every value due at `now`, in their ``Entry/order``.
    mutating func popDue(_ now: ContinuousClock.Instant) -> [Value] {
        var due: [Value] = []
        while true {
            let runDue = runStart < run.count && run[runStart].deadline <= now
            let heapDue = !heap.isEmpty && heap[0].deadline <= now
            if runDue, !heapDue || run[runStart].order < heap[0].order {
                if let action = run[runStart].action { due.append(action) }
                run[runStart].action = nil
                runStart += 1
            } else if heapDue {
                if let action = popHeap().action { due.append(action) }
            } else {
                break
            }
        }
        if runStart == run.count {
            run.removeAll(keepingCapacity: true)
            runStart = 0
        } else if runStart >= 1024, runStart * 2 >= run.count {
            run.removeFirst(runStart)
            runStart = 0
        }
        return due
    }

    private mutating func popHeap() -> Entry {
        let top = heap[0]
        let last = heap.removeLast()
        guard !heap.isEmpty else { return top }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, precedes(left, smallest) { smallest = left }
            if right < heap.count, precedes(right, smallest) { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }

    /// By index, so that comparing copies no value (a closure, with its retain and release).
    private func precedes(_ a: Int, _ b: Int) -> Bool {
        heap[a].order < heap[b].order
    }
}
