/// The one seam between TaskDispatch and a dispatcher that tracks tasks (`ManualDispatcher.startTask`): how such a
/// dispatcher learns that one of its tracked tasks is suspended on work the dispatcher holds, or on another tracked
/// task's value.
///
/// The tracking dispatcher binds ``scope`` around a tracked task's operation. An awaitable dispatch
/// (`runInBackground`, `runOnMainActor`) asks the scope for a ``TaskTrackingWait`` with ``wait(on:)``, binds it in
/// ``dispatchingWait`` around its one call to `dispatch(_:)`, and calls ``TaskTrackingWait/end()`` just before it
/// resumes the awaiting task. The default `TaskDispatcher.value(of:)` hands its await to the scope
/// (``value(of:)``). Everything else (whether the wait is recorded, by which dispatcher, and what the
/// records say) belongs to the tracking dispatcher, in `TaskDispatchTesting`: this module keeps no settling state.
///
/// Because the wait travels with the dispatch call and not with the ``DispatchedTask``, a decorator that forwards
/// synchronously keeps it, whether it forwards the task or builds a new one. Production code never binds a scope:
/// for a production dispatcher the cost is one task-local lookup that finds nothing, one binding of
/// ``dispatchingCall`` and two writes of ``DispatchCallMarker``'s thread-local per awaitable dispatch, and one
/// lookup of the task-local per task a decorator builds through the public initializer.
package enum TaskTracking {
    /// The tracked task the current code runs in, if any; child tasks and `Task {}` inherit it.
    @TaskLocal package static var scope: (any TaskTrackingScope)?

    /// The awaitable dispatch whose `dispatch(_:)` call is in progress on this task: bound around that call (and so
    /// inherited by a `Task` created inside it), read by the tracking dispatcher as it accepts a task, and by
    /// ``DispatchedTask/init(_:label:delay:priority:callSite:)`` for a task a decorator builds anew inside the call.
    @TaskLocal package static var dispatchingCall: AwaitableCall?

    /// The wait of the awaitable dispatch whose `dispatch(_:)` call is in progress on this task, if it runs in a
    /// tracked task.
    package static var dispatchingWait: (any TaskTrackingWait)? {
        Self.dispatchingCall?.wait
    }

    /// Awaits `task`: through the tracked task the current code runs in, if any, so that its dispatcher sees the
    /// await; `task.value` otherwise.
    package nonisolated(nonsending) static func value<Success: Sendable>(of task: Task<Success, any Error>)
        async throws -> Success
    {
        guard let scope = Self.scope else { return try await task.value }
        return try await scope.value(of: task)
    }

    /// A wait about to begin on `description`, if the current code runs in a tracked task; `nil` otherwise.
    ///
    /// - Parameter description: What is awaited, for diagnostics; built only inside a tracked task.
    /// - Returns: The wait to bind in ``dispatchingWait`` around the dispatch and to end before resuming, or `nil`.
    package static func wait(on description: @autoclosure () -> String) -> (any TaskTrackingWait)? {
        guard let scope = Self.scope else { return nil }
        return scope.wait(on: description())
    }
}

/// An awaitable dispatch (`runInBackground`, `runOnMainActor`) during its one call to `dispatch(_:)`, as
/// ``TaskTracking/dispatchingCall`` carries it through any decorator that forwards synchronously.
package struct AwaitableCall: Sendable {
    /// The wait of the awaiting tracked task, if the caller runs in one.
    package let wait: (any TaskTrackingWait)?
    /// The await, for the task that carries its work. A decorator that builds that task anew through the public
    /// initializer drops ``DispatchedTask/awaiter``; the initializer gives it back to a task of the same call site
    /// and context built synchronously inside the call (``isRebuilt(callSite:context:)``), so that a test
    /// dispatcher still bounds the await.
    package let awaiter: any TaskAwaiter
    /// The label the awaitable dispatch was given.
    package let label: String?
    /// Where the awaitable dispatch was called.
    package let callSite: CallSite
    /// Where its work runs.
    package let context: TaskContext

    /// Whether a task of `callSite` and `context`, built now through `DispatchedTask`'s initializer, is taken for this
    /// call's task rebuilt: it has the call's site and context, and it is built while the call is in progress on
    /// this thread (``DispatchCallMarker``), that is synchronously inside `dispatch(_:)`. A decorator that holds a
    /// task and forwards it, rebuilt, inside a later call from the same line gives it that later call's await.
    package func isRebuilt(callSite: CallSite, context: TaskContext) -> Bool {
        callSite == self.callSite && context == self.context && DispatchCallMarker.isMarked(self.awaiter)
    }

    /// The call as written, `runInBackground "parse" (Feed.swift:12)`, whatever a decorator named the task.
    package var description: String {
        describeAwaitableCall(in: self.context, self.label, self.callSite)
    }
}

/// A tracked task, as the awaitable dispatches see it: implemented by the dispatcher that tracks it.
package protocol TaskTrackingScope: AnyObject, Sendable {
    /// Makes the wait of this task on a task about to be dispatched, described by `description`.
    func wait(on description: String) -> any TaskTrackingWait

    /// Awaits `task` from this task: if the dispatcher tracks `task`, it counts the task's error as seen and this task
    /// as waiting on it until the value arrives.
    nonisolated(nonsending) func value<Success: Sendable>(of task: Task<Success, any Error>) async throws -> Success
}

/// One wait of a tracked task on a dispatched task, implemented by the dispatcher that tracks the task.
package protocol TaskTrackingWait: AnyObject, Sendable {
    /// The awaited work ran or was cancelled: called once, before the waiting task is resumed.
    ///
    /// - Parameter cancelled: Whether the await ends with `CancellationError` (the waiting task was cancelled).
    func end(cancelled: Bool)
}

/// An awaitable dispatch, as the dispatcher that holds the awaited task sees it (``DispatchedTask/awaiter``).
///
/// When the awaiting code is not one of the dispatcher's own tracked tasks, no drain of that dispatcher waits for
/// it, and no step of the test may ever come if the test itself is the caller: a test dispatcher bounds the await
/// in real time, cancels the awaited task if it has not started by then, and ends the await with ``fail(with:releasing:)``.
package protocol TaskAwaiter: AnyObject, Sendable {
    /// Ends the await with `error`, releasing `work`, the awaited task's closure, once the await can no longer end
    /// otherwise. Call it only after cancelling the awaited task succeeded, so that the closure, which would end
    /// the await too, never runs.
    func fail(with error: any Error, releasing work: consuming DispatchedTask.Work)

    /// The dispatcher accepted the awaited task, which `handle` cancels: called inside the critical section that
    /// accepts it, so that a cancellation of the awaiting task from then on cancels the task at once, however soon
    /// the dispatcher may run it (a test dispatcher may see the awaiting task as waiting from that section on).
    ///
    /// - Returns: Whether the await goes on: `false` when the awaiting task was cancelled before this call, so that
    ///   the await cancels the task and ends once the dispatch returns, and no dispatcher may count the awaiting task
    ///   as waiting meanwhile.
    func accepted(_ handle: TaskHandle) -> Bool

    /// Whether the await may still be ended with ``fail(with:releasing:)``: it has not ended, and no failure has been
    /// claimed for it.
    var mayFail: Bool { get }

    /// Claims the await's failure, which ``fail(with:releasing:)`` then delivers: from here ``mayFail`` is `false`,
    /// so of several tasks that carry the await, one ends it.
    func claimFailure()
}
