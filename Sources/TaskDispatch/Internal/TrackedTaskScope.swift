/// The tracked task a piece of async code runs in, as a task-local value: how a dispatcher that tracks tasks
/// (`ManualDispatcher.startTask`) learns that one of them is suspended on work the dispatcher holds.
///
/// `ManualDispatcher` binds it around a tracked task's operation. The awaitable dispatches (`runInBackground`,
/// `runOnMainActor`) and the virtual clock's sleep read it and attach an ``OwnedWait`` to the task they dispatch.
/// The dispatcher that tracks the task recognizes the wait when it accepts that task, in the same critical
/// section, and so counts the tracked task as waiting on its own work from the moment the work is pending; the
/// wait ends just before the awaiting task is resumed. Work that reaches another dispatcher is not recognized,
/// so a wait on it is not the tracking dispatcher's. Production code never binds the scope: for a production
/// dispatcher the cost is one task-local lookup that finds nothing.
package struct TrackedTaskScope: Sendable {
    /// The tracked task the current code runs in, if any; child tasks and `Task {}` inherit it.
    @TaskLocal package static var current: TrackedTaskScope?

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
    /// - Returns: The wait to attach to the dispatched task, or `nil`.
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

/// One wait of a tracked task on a dispatched task: attached to that task, recorded by the dispatcher that tracks
/// the awaiting task when it accepts it, and ended before the awaiting task is resumed.
///
/// `@unchecked Sendable`: ``isRecorded`` is read and written only under the lock of the dispatcher whose
/// ``TrackedTaskScope/observer`` `scope` names.
package final class OwnedWait: @unchecked Sendable {
    /// The awaiting tracked task.
    package let scope: TrackedTaskScope
    /// What is awaited, for diagnostics.
    package let description: String
    /// Whether the tracking dispatcher recorded the wait, and has not seen it end.
    package var isRecorded = false

    init(scope: TrackedTaskScope, description: String) {
        self.scope = scope
        self.description = description
    }

    /// The work ran or was cancelled: call once, before the waiting task is resumed.
    package func ended() {
        self.scope.observer.ownedWaitEnded(self)
    }
}
