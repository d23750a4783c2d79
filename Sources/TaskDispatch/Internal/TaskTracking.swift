/// The one seam between TaskDispatch and a dispatcher that tracks tasks (`ManualDispatcher.startTask`): a tracked
/// task finds its dispatcher (``scope``) and reports a wait beginning (``wait(on:)``, ``value(of:)``) and ending
/// (``TaskTrackingWait/end(cancelled:)``); an awaitable dispatch names itself during its one `dispatch(_:)` call
/// (``dispatchingCall``). The rest is the dispatcher's (see `Docs/Design.md`, "Settling"). Production pays one
/// task-local lookup and binding per awaitable dispatch.
package enum TaskTracking {
    /// The tracked task the current code runs in, if any; child tasks and `Task {}` inherit it.
    @TaskLocal package static var scope: (any TaskTrackingScope)?

    /// The awaitable dispatch whose `dispatch(_:)` call is in progress on this task. A `Task` created inside the call
    /// inherits it too, and so may forward the call's task later (see ``AwaitableCall/identity``).
    @TaskLocal package static var dispatchingCall: AwaitableCall?

    /// The wait of the awaitable dispatch in progress, if it runs in a tracked task.
    package static var dispatchingWait: (any TaskTrackingWait)? {
        Self.dispatchingCall?.wait
    }

    /// The identity of the task the current code runs in, `0` outside any task: compared, never dereferenced.
    package static var currentTask: UInt {
        withUnsafeCurrentTask { $0.map { unsafeBitCast($0, to: UInt.self) } ?? 0 }
    }

    /// Awaits `task`: through the tracked task the current code runs in, if any, so that its dispatcher sees the
    /// await; `task.value` otherwise.
    package nonisolated(nonsending) static func value<Success: Sendable>(of task: Task<Success, any Error>)
        async throws -> Success
    {
        guard let scope = Self.scope else { return try await task.value }
        return try await scope.value(of: task)
    }

    /// A wait about to begin on `description` (built only inside a tracked task), if the current code runs in a
    /// tracked task; `nil` otherwise.
    package static func wait(on description: @autoclosure () -> String) -> (any TaskTrackingWait)? {
        guard let scope = Self.scope else { return nil }
        return scope.wait(on: description())
    }
}

/// An awaitable dispatch (`runInBackground`, `runOnMainActor`, a tick's wait) during its one call to `dispatch(_:)`, as
/// ``TaskTracking/dispatchingCall`` carries it through any decorator that forwards synchronously.
package struct AwaitableCall: Sendable {
    /// The wait of the awaiting tracked task, if the caller runs in one.
    package let wait: (any TaskTrackingWait)?
    /// The await, which a test dispatcher bounds when the caller is not one of its tracked tasks.
    package let awaiter: any TaskAwaiter
    /// The label the awaitable dispatch was given.
    package let label: String?
    /// Where the awaitable dispatch was called.
    package let callSite: CallSite
    /// Where its work runs.
    package let context: TaskContext
    /// Whether it awaits a tick of a loop over ``TaskDispatcher/ticks(every:after:label:fileID:line:)``, as called
    /// (a decorator that rebuilds the task drops the tick's marker).
    package let isTick: Bool
    /// The calling task (``TaskTracking/currentTask``): a task built from another task (a decorator's `Task`, which
    /// inherits the call) is not the call's.
    package let task: UInt

    /// The call's identity in the tasks it awaits (``DispatchedTask/awaitIdentity``): 48 bits of its ``awaiter``'s
    /// address, unique among the calls in progress (the call keeps the awaiter alive); never `0`.
    package var identity: UInt64 {
        UInt64(UInt(bitPattern: ObjectIdentifier(self.awaiter)) >> 4) & 0xFFFF_FFFF_FFFF
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

/// An awaitable dispatch, as a test dispatcher that bounds it sees it (``AwaitableCall/awaiter``): an await from
/// outside its tracked tasks is bounded in real time, its task cancelled if not started, and the await ended with
/// ``fail(with:releasing:)``.
package protocol TaskAwaiter: AnyObject, Sendable {
    /// Ends the await with `error`, releasing `work`, the awaited task's closure, once the await can no longer end
    /// otherwise. Call it only after cancelling the awaited task succeeded, so that the closure, which would end
    /// the await too, never runs.
    func fail(with error: any Error, releasing work: consuming DispatchedTask.Work)

    /// The dispatcher accepted the awaited task, which `handle` cancels: called inside the accepting critical
    /// section, so a cancellation of the awaiting task from then on cancels the task at once.
    ///
    /// - Returns: Whether the await goes on: `false` when the awaiting task was cancelled first (the await then
    ///   cancels the task once the dispatch returns, and the awaiting task must not count as waiting).
    func accepted(_ handle: TaskHandle) -> Bool

    /// Whether the await may still be ended with ``fail(with:releasing:)``: it has not ended, and no failure has been
    /// claimed for it.
    var mayFail: Bool { get }

    /// Claims the await's failure, which ``fail(with:releasing:)`` then delivers: from here ``mayFail`` is `false`,
    /// so of several tasks that carry the await, one ends it.
    func claimFailure()
}
