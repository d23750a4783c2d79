extension TaskDispatcher {
    /// Runs `work` on a background thread through this dispatcher, and returns its result to the awaiting task.
    ///
    /// The awaitable form of ``background(priority:after:label:fileID:line:_:)``, named after `MainActor.run`:
    /// it dispatches one background task with ``dispatch(_:)`` and suspends until that task has run. The
    /// awaiting task then resumes on its own executor (the main actor, for a `@MainActor` caller).
    ///
    /// ```swift
    /// @MainActor func refresh() async throws {
    ///     let items = try await dispatcher.runInBackground(label: "parse") { try parse(data) }
    ///     self.items = items                  // back on the main actor
    /// }
    /// ```
    ///
    /// With `ManualDispatcher` the task waits, like any other, until the test runs it, for instance with
    /// `runNextBackground()`. Awaited from code that `startTask` did not start (the test itself, say), the await is
    /// bounded by the dispatcher's `waitLimit`: a task still pending then is cancelled, and this method throws
    /// `ManualDispatcherError` naming the call and its line.
    ///
    /// **Cancellation.** Cancelling the awaiting task cancels the dispatched task if it has not started, and
    /// this method throws `CancellationError`; the closure never runs. A task that has started runs to the end,
    /// and this method returns its result (or throws its error) even though the awaiting task is cancelled. A
    /// call made from a task that is already cancelled dispatches nothing.
    ///
    /// - Parameters:
    ///   - priority: How urgent the work is; mapped to a quality of service in production.
    ///   - delay: The minimum wait before the work may run. Zero or negative means now.
    ///   - label: A short name shown in diagnostics.
    ///   - fileID: The dispatching file; leave the default.
    ///   - line: The dispatching line; leave the default.
    ///   - work: The work to run in the background.
    /// - Returns: What `work` returned.
    /// - Throws: What `work` threw, or `CancellationError` when the awaiting task was cancelled before the
    ///   work started; with `ManualDispatcher`, its error when the work did not start within its wait limit;
    ///   ``DroppedWorkError`` when the dispatcher released the work without running it (a decorator that
    ///   cancelled or dropped it, say).
    nonisolated(nonsending) public func runInBackground<Value: Sendable>(
        priority: BackgroundPriority = .medium,
        after delay: Duration = .zero,
        label: String? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ work: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        try Task.checkCancellation()
        let callSite = CallSite(fileID: fileID, line: line)
        let wait = TaskTracking.wait(on: describeAwaitableCall("runInBackground", label, callSite))
        let awaited = AwaitedDispatch<Value>(reporting: wait)
        return try await self.awaitResult(through: awaited, binding: wait) {
            let body = AwaitedWork(work, ending: awaited, method: "runInBackground", label: label, callSite: callSite)
            var task = DispatchedTask(
                unbound: .background { body.run() }, label: label, delay: delay, priority: priority, callSite: callSite)
            task.awaiter = awaited
            return task
        }
    }

    /// Runs `work` on the main actor through this dispatcher, and returns its result to the awaiting task.
    ///
    /// The awaitable form of ``foreground(after:label:fileID:line:_:)``, named after `MainActor.run`, with one
    /// difference: `MainActor.run` hops to the main actor directly, while this method dispatches a foreground
    /// task with ``dispatch(_:)``, so a test's `ManualDispatcher` holds it until the test runs it, and a
    /// delay, a label and a call site come with it. The awaiting task resumes on its own executor once the
    /// task has run: for a `@MainActor` caller that is a later turn of the main actor, not the task itself.
    ///
    /// ```swift
    /// nonisolated func sync(_ store: Store, model: FeedModel) async throws {
    ///     let feed = try await dispatcher.runInBackground(label: "parse") { try store.load() }
    ///     try await dispatcher.runOnMainActor(label: "show") { model.show(feed) }
    /// }
    /// ```
    ///
    /// **Cancellation.** As for ``runInBackground(priority:after:label:fileID:line:_:)``: a task that has not
    /// started is cancelled with the awaiting task and this method throws `CancellationError`; a task that
    /// started runs to the end and its result is returned.
    ///
    /// - Parameters:
    ///   - delay: The minimum wait before the work may run. Zero or negative means now.
    ///   - label: A short name shown in diagnostics.
    ///   - fileID: The dispatching file; leave the default.
    ///   - line: The dispatching line; leave the default.
    ///   - work: The work to run on the main actor.
    /// - Returns: What `work` returned.
    /// - Throws: What `work` threw, or `CancellationError` when the awaiting task was cancelled before the
    ///   work started; with `ManualDispatcher`, its error when the work did not start within its wait limit
    ///   (see `runInBackground`); ``DroppedWorkError`` when the dispatcher released the work without running it.
    nonisolated(nonsending) public func runOnMainActor<Value: Sendable>(
        after delay: Duration = .zero,
        label: String? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ work: @escaping @MainActor @Sendable () throws -> Value
    ) async throws -> Value {
        try Task.checkCancellation()
        let callSite = CallSite(fileID: fileID, line: line)
        let wait = TaskTracking.wait(on: describeAwaitableCall("runOnMainActor", label, callSite))
        let awaited = AwaitedDispatch<Value>(reporting: wait)
        return try await self.awaitResult(through: awaited, binding: wait) {
            let body = AwaitedWork(work, ending: awaited, method: "runOnMainActor", label: label, callSite: callSite)
            var task = DispatchedTask(
                unbound: .foreground { body.run() }, label: label, delay: delay, callSite: callSite)
            task.awaiter = awaited
            return task
        }
    }

    /// Dispatches the task that `makeTask` builds, whose closure finishes `awaited`, and suspends until `awaited`
    /// is finished or cancelled.
    ///
    /// The task is built inside the dispatch, so only the dispatcher holds its closure while the caller waits:
    /// a closure the dispatcher releases unrun ends the await (see ``AwaitedWork``). The call, with a tracked task's
    /// `wait`, is bound in `TaskTracking.dispatchingCall` around the call to ``dispatch(_:)`` only: the dispatcher
    /// that tracks the task reads it there, and a task a decorator builds anew gets the await back from it, through
    /// any decorator that forwards synchronously.
    func awaitResult<Value: Sendable>(
        through awaited: AwaitedDispatch<Value>,
        binding wait: (any TaskTrackingWait)?,
        isolation: isolated (any Actor)? = #isolation,
        makeTask: () -> DispatchedTask
    ) async throws -> Value {
        try await withTaskCancellationHandler {
            _ = isolation  // names the isolation, so the closure keeps it: the caller resumes without a hop
            return try await withCheckedThrowingContinuation { continuation in
                awaited.start(continuation) {
                    let task = makeTask()
                    let call = AwaitableCall(
                        wait: wait, awaiter: awaited, label: task.label, callSite: task.callSite, context: task.context)
                    return TaskTracking.$dispatchingCall.withValue(call) { self.dispatch(task) }
                }
            }
        } onCancel: {
            awaited.cancel()
        }
    }
}

/// `runInBackground "parse" (Feed.swift:12)`: an awaitable dispatch as every message names it (the tracked waits,
/// `DroppedWorkError`, and a test dispatcher's messages about an await it ended).
package func describeAwaitableCall(_ method: String, _ label: String?, _ callSite: CallSite) -> String {
    "\(method)\(label.map { " \"\($0)\"" } ?? "") (\(callSite))"
}

/// The awaitable dispatch whose work runs in `context`, as ``describeAwaitableCall(_:_:_:)`` names it:
/// `runOnMainActor` for the foreground, `runInBackground` for the background.
package func describeAwaitableCall(in context: TaskContext, _ label: String?, _ callSite: CallSite) -> String {
    describeAwaitableCall(context == .foreground ? "runOnMainActor" : "runInBackground", label, callSite)
}
