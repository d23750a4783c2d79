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

    /// The task `task` becomes: a ``SeriesTick`` if it is a tick of a repeating series.
    static func make(_ task: DispatchedTask, key: TaskKey, callSite: UInt32, state: State) -> ScheduledTask {
        guard let marker = task.series else { return ScheduledTask(task, key: key, callSite: callSite, state: state) }
        return SeriesTick(task, marker: marker, key: key, callSite: callSite, state: state)
    }

    init(_ task: DispatchedTask, key: TaskKey, callSite: UInt32, state: State) {
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

    /// Runs `work`, this task's closure, outside the lock: background work inline, foreground work on the main actor,
    /// where `Storage.execute(_:)` calls it (through the main queue from another thread).
    func execute(_ work: DispatchedTask.Work) {
        switch work {
        case .background(let work): work()
        case .foreground(let work): MainActor.assumeIsolated(work)
        }
    }

    /// The task was cancelled; called outside the lock.
    func cancelled() {}
}

/// A task forwarded through a `DispatchScope`, whose end the scope hears of (see `ScopeCarrying`).
final class ScopedTask: ScheduledTask, @unchecked Sendable {
    /// Let go at the end, by the run or the cancel (one of them), so that the history holds no cycle through it.
    @exclusivity(unchecked) private var membership: ScopeMembership?

    /// Admits the task to `scope` under its dispatcher's lock, before a run or a cancel can see it.
    @inline(__always)
    func join(_ scope: borrowing ScopeRegistry, countingBackground: Bool) {
        _ = scope.admit(Unmanaged.passUnretained(self), countingBackground: countingBackground) {
            self.membership = $0
        }
    }

    /// Whether the scope took the task in; read under the dispatcher's lock, before a run.
    var isAdmitted: Bool { self.membership != nil }

    /// Runs the closure: a task claimed as its scope's `cancelAll()` runs was starting as it ran, and runs to its end
    /// (the cancel takes the dispatcher's lock for all the scope's pending tasks at once).
    override func execute(_ work: DispatchedTask.Work) {
        super.execute(work)
        self.membership.take()?.ended()
    }

    override func cancelled() {
        self.membership.take()?.ended()
    }
}

final class SeriesTick: ScheduledTask, @unchecked Sendable {
    let marker: SeriesMarker

    fileprivate init(_ task: DispatchedTask, marker: SeriesMarker, key: TaskKey, callSite: UInt32, state: State) {
        self.marker = marker
        super.init(task, key: key, callSite: callSite, state: state)
    }
}
