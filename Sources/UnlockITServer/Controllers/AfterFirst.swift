import Synchronization

/// Runs a second action after a first, whichever is asked for first: an unlock's `granted_late`
/// event, which the gateway's thread may report before the unlock's own task has recorded the
/// `lock_timeout` it follows, is queued after it all the same.
final class AfterFirst: Sendable {
    private enum State {
        case waiting
        /// The second came first: it runs when the first is done.
        case secondWaiting(@Sendable () -> Void)
        case firstDone
    }

    private let state = Mutex(State.waiting)

    /// The first action is done; runs the second now if it came first.
    func firstDone() {
        let waiting = state.withLock { state -> (@Sendable () -> Void)? in
            defer { state = .firstDone }
            if case .secondWaiting(let second) = state { return second }
            return nil
        }
        waiting?()
    }

    /// Runs `second` now if the first is done, or once it is.
    func second(_ second: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            guard case .firstDone = state else {
                state = .secondWaiting(second)
                return false
            }
            return true
        }
        if now { second() }
    }
}
