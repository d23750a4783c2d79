import TaskDispatch

/// One task a ``ManualDispatcher`` accepted, until it runs or is cancelled: a class, so that a handle, a queue and the
/// history share it (a cancel is O(1)); 72 bytes, in this field order. `@unchecked Sendable`: `work` and `state` are
/// touched only under its dispatcher's lock.
class ScheduledTask: @unchecked Sendable {
    enum State: UInt8 {
        /// In the delay heap, waiting for the clock.
        case waiting
        /// In a due queue, ready to run.
        case due
        /// Taken by a run method: running or finished.
        case started
        /// Cancelled before it started.
        case cancelled
    }

    @exclusivity(unchecked) var work: DispatchedTask.Work?
    @exclusivity(unchecked) var state: State
    let context: TaskContext
    let priority: BackgroundPriority
    /// The index of the task's call site in its schedule's ``CallSiteTable``.
    let callSite: UInt32
    let label: String?
    let key: TaskKey

    /// The task `task` becomes: a ``ScopedTask`` if it was forwarded through a scope with `membership`, a
    /// ``SeriesTick`` if it is a tick of a repeating series.
    static func make(
        _ task: DispatchedTask, key: TaskKey, callSite: UInt32, state: State, membership: ScopeMembership?
    ) -> ScheduledTask {
        if let membership {
            return ScopedTask(task, membership: membership, key: key, callSite: callSite, state: state)
        }
        guard let marker = task.series else { return ScheduledTask(task, key: key, callSite: callSite, state: state) }
        return SeriesTick(task, marker: marker, key: key, callSite: callSite, state: state)
    }

    fileprivate init(_ task: DispatchedTask, key: TaskKey, callSite: UInt32, state: State) {
        self.work = task.work
        self.state = state
        self.context = task.context
        self.priority = task.priority
        self.callSite = callSite
        self.label = task.label
        self.key = key
    }

    /// Whether the task may still run: it waits for the clock or is due.
    @inline(__always)
    var isPending: Bool {
        self.state.rawValue <= State.due.rawValue
    }

    /// The repeating series this task is the next tick of, if it is one.
    var series: SeriesMarker? {
        (self as? SeriesTick)?.marker
    }

    /// The task ran to its end, or was cancelled (see ``ScopeCarrying``); called outside the lock.
    func ended() {}
}

/// A task forwarded through a `DispatchScope`, whose end the scope hears of.
final class ScopedTask: ScheduledTask, @unchecked Sendable {
    let membership: ScopeMembership

    fileprivate init(
        _ task: DispatchedTask, membership: ScopeMembership, key: TaskKey, callSite: UInt32, state: State
    ) {
        self.membership = membership
        super.init(task, key: key, callSite: callSite, state: state)
    }

    override func ended() {
        self.membership.ended()
    }
}

/// The next tick of a repeating series: a subclass, so that the other tasks do not carry the marker.
final class SeriesTick: ScheduledTask, @unchecked Sendable {
    let marker: SeriesMarker

    fileprivate init(_ task: DispatchedTask, marker: SeriesMarker, key: TaskKey, callSite: UInt32, state: State) {
        self.marker = marker
        super.init(task, key: key, callSite: callSite, state: state)
    }
}
