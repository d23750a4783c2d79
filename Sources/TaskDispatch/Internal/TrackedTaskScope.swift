/// The tracked task a piece of async code runs in, as a task-local value: how a dispatcher that tracks tasks
/// (`ManualDispatcher.startTask`) learns that one of them is suspended on work the dispatcher holds.
///
/// `ManualDispatcher` binds it around a tracked task's operation. The awaitable dispatches (`runInBackground`,
/// `runOnMainActor`) and the virtual clock's sleep read it and make an ``OwnedWait``. An awaitable dispatch binds
/// that wait in ``dispatching`` around its one call to `dispatch(_:)`; the virtual clock's sleep hands it to its
/// dispatcher directly. The dispatcher that tracks the task recognizes the wait when it accepts a task inside that
/// call, in the same critical section, and so counts the tracked task as waiting on its own work from the moment
/// the work is pending; the wait ends just before the awaiting task is resumed. Because the wait travels with the
/// call and not with the ``DispatchedTask``, a decorator that forwards synchronously keeps it, whether it
/// forwards the task or builds a new one. Work that reaches another dispatcher is not recognized, so a wait on it
/// is not the tracking dispatcher's. Production code never binds the scope: for a production dispatcher the cost
/// is one task-local lookup that finds nothing.
package struct TrackedTaskScope: Sendable {
    /// The tracked task the current code runs in, if any; child tasks and `Task {}` inherit it.
    @TaskLocal package static var current: TrackedTaskScope?

    /// The wait of the awaitable dispatch whose `dispatch(_:)` call is in progress on this task, if it runs in a
    /// tracked task: bound only around that call, read by the tracking dispatcher as it accepts a task.
    ///
    /// Code that the call runs synchronously (a decorator's own dispatches, a task run at once in auto-drain mode)
    /// sees it too; ``OwnedWait`` is recorded at most once, and never after it ended, so they cannot count it twice.
    @TaskLocal package static var dispatching: OwnedWait?

    /// Who tracks the task.
    package let observer: any TrackedTaskObserver
    /// The task's identity within `observer`.
    package let id: UInt64
    /// The task's label, for the work it dispatches without a call site of its own (a clock sleep).
    package let label: String?
    /// Where the task was started, for the same work.
    package let callSite: CallSite

    package init(observer: any TrackedTaskObserver, id: UInt64, label: String?, callSite: CallSite) {
        self.observer = observer
        self.id = id
        self.label = label
        self.callSite = callSite
    }

    /// A wait about to begin on `description`, if the current code runs in a tracked task; `nil` otherwise.
    ///
    /// - Parameter description: What is awaited, for diagnostics; built only inside a tracked task.
    /// - Returns: The wait to bind in ``dispatching`` around the dispatch, or `nil`.
    package static func wait(on description: @autoclosure () -> String) -> OwnedWait? {
        guard let scope = Self.current else { return nil }
        return OwnedWait(scope: scope, description: description())
    }
}

/// A dispatcher that tracks tasks and wants to know when a wait on its own work ends.
package protocol TrackedTaskObserver: AnyObject, Sendable {
    /// The awaiting task is about to be resumed: `wait` ended, if this observer recorded it.
    func ownedWaitEnded(_ wait: OwnedWait)
}

/// One wait of a tracked task on a dispatched task: recorded by the dispatcher that tracks the awaiting task when
/// it accepts that task (at most once), and ended before the awaiting task is resumed.
///
/// `@unchecked Sendable`: ``state`` is read and written only under the lock of the dispatcher whose
/// ``TrackedTaskScope/observer`` `scope` names.
package final class OwnedWait: @unchecked Sendable {
    /// Where the wait stands in the tracking dispatcher's records.
    package enum State: Sendable {
        /// Not recorded yet: the awaited task has not reached the tracking dispatcher.
        case unrecorded
        /// Recorded, and not yet seen to end.
        case recorded
        /// Ended: a later dispatch in the same scope must not record it again.
        case ended
    }

    /// The awaiting tracked task.
    package let scope: TrackedTaskScope
    /// What is awaited, for diagnostics.
    package let description: String
    /// Where the wait stands; see ``State``.
    package var state = State.unrecorded

    init(scope: TrackedTaskScope, description: String) {
        self.scope = scope
        self.description = description
    }

    /// The work ran or was cancelled: call once, before the waiting task is resumed.
    package func ended() {
        self.scope.observer.ownedWaitEnded(self)
    }
}
