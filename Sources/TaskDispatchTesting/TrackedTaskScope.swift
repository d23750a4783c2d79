import TaskDispatch

/// A task started with ``ManualDispatcher/startTask(label:callSite:operation:)``, as its own code sees it: bound in
/// `TaskTracking.scope` around the task's operation, it makes the waits that the awaitable dispatches and the
/// virtual clock's sleep report, and it owns them on behalf of its dispatcher.
///
/// The whole life of a wait is in this module, under the dispatcher's lock: the dispatcher records it when it
/// accepts the awaited task inside the awaitable's `dispatch(_:)` call (`ManualDispatcher.record`), in the same
/// critical section, so the records never say "settled" while the work is not yet pending; ``OwnedWait/end()``
/// ends it just before the awaiting task is resumed. `TaskDispatch` only carries the wait from the one to the
/// other (see `TaskTracking`).
final class TrackedTaskScope: TaskTrackingScope {
    /// The lock and state of the dispatcher that tracks the task.
    let monitor: Monitor<Schedule>
    /// The task's identity in the dispatcher's records.
    let id: UInt64
    /// The task's label, for the work it dispatches without a call site of its own (a clock sleep).
    let label: String?
    /// Where the task was started, for the same work.
    let callSite: CallSite

    init(monitor: Monitor<Schedule>, id: UInt64, label: String?, callSite: CallSite) {
        self.monitor = monitor
        self.id = id
        self.label = label
        self.callSite = callSite
    }

    /// The scope of the current code, if it runs in a task that a ``ManualDispatcher`` tracks.
    static var current: TrackedTaskScope? {
        TaskTracking.scope as? TrackedTaskScope
    }

    func wait(on description: String) -> any TaskTrackingWait {
        self.makeWait(on: description)
    }

    /// A wait of this task on `description`, not recorded yet.
    func makeWait(on description: String) -> OwnedWait {
        OwnedWait(scope: self, description: description)
    }
}

/// One wait of a tracked task on a task its dispatcher holds: recorded by the dispatcher when it accepts that task
/// (at most once), and ended before the awaiting task is resumed.
///
/// `@unchecked Sendable`: ``state`` is read and written only under the lock of ``scope``'s monitor.
final class OwnedWait: TaskTrackingWait, @unchecked Sendable {
    /// Where the wait stands in the tracking dispatcher's records.
    enum State {
        /// Not recorded yet: the awaited task has not reached the tracking dispatcher.
        case unrecorded
        /// Recorded, and not yet seen to end.
        case recorded
        /// Ended: a later dispatch inside the same awaitable call must not record it again.
        case ended
    }

    /// The awaiting tracked task.
    let scope: TrackedTaskScope
    /// What is awaited, for diagnostics.
    let description: String
    /// Where the wait stands; see ``State``.
    private var state = State.unrecorded

    init(scope: TrackedTaskScope, description: String) {
        self.scope = scope
        self.description = description
    }

    /// Records the wait in `schedule` if it is a wait of one of that schedule's tracked tasks that was neither
    /// recorded nor ended yet. Call under the lock of `monitor`, the dispatcher that accepts the awaited task.
    ///
    /// A wait that another dispatcher's task makes (work that reaches this dispatcher through a decorator of
    /// another) is not this dispatcher's, and code that a dispatch call runs synchronously (a decorator's own
    /// dispatches, a task run at once in auto-drain mode) cannot record it twice.
    func recordBegin(in schedule: inout Schedule, of monitor: Monitor<Schedule>) {
        // The owner first: `state` may be read only under the lock of the dispatcher that made the wait.
        guard self.scope.monitor === monitor, self.state == .unrecorded else { return }
        schedule.tracked.ownedWaitBegan(self.scope.id, on: self.description)
        self.state = .recorded
    }

    /// The awaited work ran or was cancelled: ends the wait in the dispatcher's records, if it was recorded there,
    /// and wakes the async calls the change satisfies.
    func end() {
        self.scope.monitor.changeTrackedTasks { schedule in
            let wasRecorded = self.state == .recorded
            self.state = .ended
            guard wasRecorded else { return }  // it awaited another dispatcher's work
            schedule.tracked.ownedWaitEnded(self.scope.id, on: self.description)
        }
    }
}
