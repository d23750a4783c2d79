import Dispatch

/// One task accepted by a production dispatcher: its work and whether it started or was cancelled.
///
/// The state and its lock share one allocation (a ``LockedValue``); this struct is the handle's canceller,
/// stored inline in the handle's existential, so a dispatch allocates nothing more. `start()` and
/// `cancelTask(id:)` both move the state out of `.pending` under the lock, so exactly one of them wins: a
/// task runs completely or not at all.
struct _ProductionTask: TaskCancelling {
    enum State: Sendable {
        case pending(DispatchedTask.Work)
        case started
        case cancelled
    }

    private let _state: LockedValue<State>

    init(_ work: DispatchedTask.Work) {
        self._state = LockedValue(.pending(work))
    }

    /// Marks the task started and hands out its work, or returns `nil` if it was cancelled.
    @inline(__always)
    func start() -> DispatchedTask.Work? {
        self._state.withLock { state in
            guard case .pending(let work) = state else { return nil }
            state = .started
            return work
        }
    }

    /// Runs a background task unless it was cancelled.
    @inline(__always)
    func runBackground() {
        if case .background(let work) = self.start() {
            work()
        }
    }

    /// Runs a foreground task unless it was cancelled. Call on the main queue only.
    @inline(__always)
    func runForeground() {
        if case .foreground(let work) = self.start() {
            MainActor.assumeIsolated(work)
        }
    }

    /// Cancels the task if it is still pending; the identifier is unused (one state per task).
    func cancelTask(id: UInt64) -> Bool {
        self._state.withLock { state in
            guard case .pending = state else { return false }
            state = .cancelled
            return true
        }
    }

    /// Whether the task was cancelled before it started.
    func isTaskCancelled(id: UInt64) -> Bool {
        self._state.withLock { state in
            if case .cancelled = state { return true }
            return false
        }
    }
}

extension Duration {
    /// The duration as a Dispatch deadline from now; zero or negative durations mean now.
    var _dispatchDeadline: DispatchTime {
        let (seconds, attoseconds) = self.components
        guard seconds >= 0, self > .zero else { return .now() }
        let maxSeconds = Int64(Int.max / 1_000_000_000) - 1
        guard seconds < maxSeconds else { return .distantFuture }
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        return .now() + .nanoseconds(nanoseconds)
    }
}
