/// The tracked task a piece of async code runs in, as a task-local value: how a dispatcher that tracks tasks
/// (`ManualDispatcher.startTask`) learns that one of them is about to suspend on work the dispatcher owns.
///
/// `ManualDispatcher` binds it around a tracked task's operation. The awaitable dispatches
/// (`runInBackground`, `runOnMainActor`) and the virtual clock's sleep read it, and when the task awaits work of
/// the dispatcher that tracks it, they report the start and the end of that wait through ``observer``. Production
/// code never binds it, so for a production dispatcher the cost is one task-local lookup that finds nothing.
package struct TrackedTaskScope: Sendable {
    /// The tracked task the current code runs in, if any; child tasks and `Task {}` inherit it.
    @TaskLocal package static var current: TrackedTaskScope?

    /// Who tracks the task.
    package let observer: any TrackedTaskObserver
    /// The task's identity within `observer`.
    package let id: UInt64

    package init(observer: any TrackedTaskObserver, id: UInt64) {
        self.observer = observer
        self.id = id
    }

    /// The wait about to begin, if the current code runs in a task tracked by `dispatcher`; `nil` otherwise
    /// (no tracked task, or one tracked by another dispatcher, whose work this dispatcher does not own).
    ///
    /// - Parameters:
    ///   - dispatcher: The dispatcher that holds the awaited work.
    ///   - description: What is awaited, for diagnostics; built only when the wait is reported.
    /// - Returns: The wait to report, or `nil`.
    package static func ownedWait(
        on dispatcher: some TaskDispatcher,
        _ description: @autoclosure () -> String
    ) -> OwnedWait? {
        guard let scope = Self.current, scope.observer.tracks(dispatcher) else { return nil }
        return OwnedWait(scope: scope, description: description())
    }
}

/// A dispatcher that tracks tasks and wants to know when they wait on its own work.
package protocol TrackedTaskObserver: AnyObject, Sendable {
    /// Whether `dispatcher` is the one this observer tracks tasks for.
    func tracks(_ dispatcher: some TaskDispatcher) -> Bool
    /// Task `id` is about to suspend until the dispatcher runs `description`.
    func ownedWaitBegan(task id: UInt64, on description: String)
    /// Task `id` is about to be resumed: the wait on `description` ended.
    func ownedWaitEnded(task id: UInt64, on description: String)
}

/// One wait of a tracked task on work its dispatcher owns: reported when it begins and when it ends.
package struct OwnedWait: Sendable {
    let scope: TrackedTaskScope
    let description: String

    /// The task is about to suspend on the work: call before the work is dispatched.
    package func began() {
        self.scope.observer.ownedWaitBegan(task: self.scope.id, on: self.description)
    }

    /// The work ran or was cancelled: call once, before the waiting task is resumed.
    package func ended() {
        self.scope.observer.ownedWaitEnded(task: self.scope.id, on: self.description)
    }
}
