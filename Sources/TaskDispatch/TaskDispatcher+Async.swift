extension TaskDispatcher {
    /// Runs `work` on a background thread through this dispatcher, and returns its result to the awaiting task.
    ///
    /// The awaitable form of ``background(priority:after:label:fileID:line:_:)``; the caller resumes on its own
    /// executor. Cancelling the awaiting task before the work starts cancels the work (a call from a cancelled task
    /// dispatches nothing); work that started runs to the end and returns its result.
    ///
    /// - Parameters:
    ///   - priority: How urgent the work is; mapped to a quality of service in production.
    ///   - delay: The minimum wait before the work may run. Zero or negative means now.
    ///   - label: A short name shown in diagnostics.
    ///   - fileID: The dispatching file; leave the default.
    ///   - line: The dispatching line; leave the default.
    ///   - work: The work to run in the background.
    /// - Returns: What `work` returned.
    /// - Throws: What `work` threw; `CancellationError` (above); ``DroppedWorkError``; a test dispatcher's limit error.
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
            return DispatchedTask(
                unbound: .background { body.run() }, label: label, delay: delay, priority: priority, callSite: callSite)
        }
    }

    /// Runs `work` on the main actor through this dispatcher, and returns its result to the awaiting task.
    ///
    /// The awaitable form of ``foreground(after:label:fileID:line:_:)``. Unlike `MainActor.run` it dispatches a task,
    /// so a test's `ManualDispatcher` holds it until the test runs it. Cancellation as for
    /// ``runInBackground(priority:after:label:fileID:line:_:)``.
    ///
    /// - Parameters:
    ///   - delay: The minimum wait before the work may run. Zero or negative means now.
    ///   - label: A short name shown in diagnostics.
    ///   - fileID: The dispatching file; leave the default.
    ///   - line: The dispatching line; leave the default.
    ///   - work: The work to run on the main actor.
    /// - Returns: What `work` returned.
    /// - Throws: What `work` threw; `CancellationError`; ``DroppedWorkError``; a test dispatcher's wait-limit error.
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
            return DispatchedTask(unbound: .foreground { body.run() }, label: label, delay: delay, callSite: callSite)
        }
    }

    /// Dispatches the task that `makeTask` builds, whose closure finishes `awaited`, and suspends until `awaited`
    /// is finished or cancelled.
    ///
    /// Only the dispatcher holds the closure, so one it releases unrun ends the await (``AwaitedWork``). The call is
    /// bound in `TaskTracking.dispatchingCall` around ``dispatch(_:)`` and the task carries its identity, so a test
    /// dispatcher matches the two through a forwarding decorator (see `Docs/Design.md`, "Settling").
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
                    var task = makeTask()
                    let call = AwaitableCall(
                        wait: wait, awaiter: awaited, label: task.label, callSite: task.callSite, context: task.context,
                        isTick: task.series != nil, task: TaskTracking.currentTask)
                    task.awaitIdentity = call.identity
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
