import TaskDispatch

/// One task a ``ManualDispatcher`` accepted, from its dispatch until it runs or is cancelled.
///
/// A class, so that a handle, a queue and the history can all point at the same task: cancelling through the
/// handle is O(1) and releases its closure at once. Field order keeps the instance at 72 bytes; a tick of a
/// repeating series is a ``SeriesTick``, which adds its marker.
///
/// `@unchecked Sendable`: the identity fields are `let`s written before the task is shared; `work` and `state`
/// are read and written only by the schedule that owns the task, under its dispatcher's lock.
class ScheduledTask: @unchecked Sendable {
    /// Where a task stands.
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

    /// The closure, until the task starts or is cancelled.
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
}

/// The next tick of a repeating series: a subclass, so that the other tasks do not carry the marker.
final class SeriesTick: ScheduledTask, @unchecked Sendable {
    let marker: SeriesMarker

    fileprivate init(_ task: DispatchedTask, marker: SeriesMarker, key: TaskKey, callSite: UInt32, state: State) {
        self.marker = marker
        super.init(task, key: key, callSite: callSite, state: state)
    }
}
