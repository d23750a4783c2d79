/// The meeting point of one awaitable dispatch: the awaiting task's continuation, the dispatched task's handle,
/// and whether the awaiting task was cancelled.
///
/// Four parties may act on it, each on its own thread: the awaiting task (``start(_:dispatch:)``), the
/// dispatched task when it runs (``finish(_:)``), the awaiting task's cancellation handler (``cancel()``), and
/// the release of the dispatched closure (``workReleased(_:)``, from ``AwaitedWork``). The continuation is taken
/// out under the lock before it is resumed, so it is resumed at most once. It is resumed at least once: a
/// closure that does not run is released, and its release ends the await if nothing else did (with
/// `CancellationError` after ``cancel()``, with ``DroppedWorkError`` otherwise).
package final class AwaitedDispatch<Value: Sendable>: TaskAwaiter {
    private struct State: Sendable {
        var continuation: CheckedContinuation<Value, any Error>?
        var handle: TaskHandle?
        var isCancelled = false
        /// Whether a dispatcher claimed the await's failure (``claimFailure()``).
        var failureClaimed = false
    }

    private let state = LockedValue(State())
    /// The wait of a tracked task on the dispatched task, if any (see ``TaskTracking``), to end before the
    /// awaiting task is resumed.
    private let trackedWait: (any TaskTrackingWait)?

    /// - Parameter trackedWait: The wait of a tracked task on the dispatched task, to end on resumption; `nil` for
    ///   none.
    package init(reporting trackedWait: (any TaskTrackingWait)? = nil) {
        self.trackedWait = trackedWait
    }

    /// Stores the continuation and dispatches the task, unless the awaiting task was cancelled first.
    ///
    /// `dispatch` runs outside the lock: a dispatcher in auto-drain mode runs the task, and so ``finish(_:)``,
    /// before it returns.
    package func start(_ continuation: CheckedContinuation<Value, any Error>, dispatch: () -> TaskHandle) {
        let cancelledEarly = self.state.withLock { state -> Bool in
            guard !state.isCancelled else { return true }
            state.continuation = continuation
            return false
        }
        if cancelledEarly {
            // Never dispatched: the tracked wait ends unrecorded, and the awaiting task's records note that it
            // returned at once (a loop of such awaits in a cancelled task never settles).
            self.resume(continuation, with: .failure(CancellationError()))
            return
        }
        let handle = dispatch()
        // The handle `dispatch` returned replaces the one the dispatcher handed over (``accepted(_:)``): a decorator's
        // handle is the one to cancel through from now on. The one replaced is released outside the lock.
        let (cancelledMeanwhile, replaced) = self.state.withLock { state -> (Bool, TaskHandle?) in
            guard !state.isCancelled else { return (true, nil) }
            // An await that has ended (the task ran inside the dispatch) keeps no handle.
            guard state.continuation != nil else { return (false, nil) }
            defer { state.handle = handle }
            return (false, state.handle)
        }
        _ = consume replaced
        if cancelledMeanwhile && handle.cancel() {
            self.finish(.failure(CancellationError()))
        }
    }

    /// Resumes the awaiting task with the task's outcome; does nothing if it was resumed already.
    package func finish(_ result: Result<Value, any Error>) {
        guard let continuation = self.takeContinuation() else { return }
        self.resume(continuation, with: result)
    }

    /// Keeps `handle`, so that ``cancel()`` reaches the task from now on, until `dispatch` returns its own handle to
    /// ``start(_:dispatch:)`` (a decorator's, which then replaces it); a cancellation that came first is acted on
    /// there, and this returns `false`.
    package func accepted(_ handle: TaskHandle) -> Bool {
        self.state.withLock { state in
            if state.handle == nil, state.continuation != nil { state.handle = handle }
            return !state.isCancelled
        }
    }

    package var mayFail: Bool {
        self.state.withLock { $0.continuation != nil && !$0.failureClaimed }
    }

    package func claimFailure() {
        self.state.withLock { $0.failureClaimed = true }
    }

    /// Ends the await with `error`: the dispatcher cancelled the awaited task, which therefore never finishes it.
    /// The await is taken before `work` is released, so the release (see ``AwaitedWork``) does not end it first.
    /// A ``DispatchScope`` that forwarded the task, and returned the handle kept here, forgets it.
    package func fail(with error: any Error, releasing work: consuming DispatchedTask.Work) {
        let continuation = self.takeAwait(forgettingScopedWork: true).continuation
        _ = consume work
        guard let continuation else { return }
        self.resume(continuation, with: .failure(error))
    }

    /// The dispatched closure was released (``AwaitedWork``'s `deinit`): if it never finished the await, ends it
    /// with `CancellationError` when the awaiting task cancelled it, and otherwise with `dropped()`, so the
    /// awaiting task is not left suspended for ever.
    package func workReleased(_ dropped: () -> any Error) {
        let (continuation, isCancelled) = self.takeAwait()
        guard let continuation else { return }  // it ran, or a cancel or a failure ended the await
        self.resume(continuation, with: .failure(isCancelled ? CancellationError() : dropped()))
    }

    /// The continuation, taken so that nothing else resumes it; `nil` if the await has ended.
    private func takeContinuation() -> CheckedContinuation<Value, any Error>? {
        self.takeAwait().continuation
    }

    /// Ends the await's hold on its state: takes the continuation, so that nothing else resumes it (`nil` if the
    /// await has ended), with whether the awaiting task cancelled it. Nothing is left to cancel either: the handle
    /// (a decorator's may hold code of its own) is released outside the lock.
    private func takeAwait(forgettingScopedWork: Bool = false) -> (
        continuation: CheckedContinuation<Value, any Error>?, isCancelled: Bool
    ) {
        let (continuation, isCancelled, handle) = self.state.withLock { state in
            defer {
                state.continuation = nil
                state.handle = nil
            }
            return (state.continuation, state.isCancelled, state.handle)
        }
        if forgettingScopedWork, continuation != nil, let entry = handle?._canceller as? DispatchEntry {
            _ = entry.cancelTask()  // the task beneath is cancelled already: the entry only retires
        }
        _ = consume handle
        return (continuation, isCancelled)
    }

    /// Ends the tracked wait and resumes the awaiting task.
    private func resume(_ continuation: CheckedContinuation<Value, any Error>, with result: Result<Value, any Error>) {
        // Before the resume: once resumed, the task is running again, no longer waiting on the dispatcher.
        if let trackedWait = self.trackedWait {
            let cancelled: Bool
            if case .failure(let error) = result { cancelled = error is CancellationError } else { cancelled = false }
            trackedWait.end(cancelled: cancelled)
        }
        continuation.resume(with: result)
    }

    /// The awaiting task was cancelled: cancels the dispatched task if it has not started, and if that
    /// stopped it, resumes the awaiting task with `CancellationError`. A task that started runs to the end.
    ///
    /// The tracked wait ends before the dispatched task goes, so no drain sees the work gone while the awaiting
    /// task still counts as waiting on it: from here it is on its way to run again.
    package func cancel() {
        let handle = self.state.withLock { state in
            state.isCancelled = true
            return state.handle
        }
        guard let handle else { return }
        self.trackedWait?.end(cancelled: true)
        if handle.cancel() {
            self.finish(.failure(CancellationError()))
        }
    }
}

/// The closure of one awaitable dispatch, as its dispatcher holds it: the caller's work and the await it ends.
///
/// The closure's whole context, held only by the dispatcher. When the dispatcher releases the closure without
/// running it (a decorator that cancels or drops the task), `deinit` ends the await with ``DroppedWorkError``
/// instead of leaving it suspended for ever; after a run or a cancel it finds the await ended.
package final class AwaitedWork<Value: Sendable, Body: Sendable>: Sendable {
    private let awaited: AwaitedDispatch<Value>
    /// The caller's work: `@Sendable () throws -> Value`, or `@MainActor` for a foreground task.
    fileprivate let body: Body
    private let method: StaticString
    private let label: String?
    private let callSite: CallSite

    package init(
        _ body: Body, ending awaited: AwaitedDispatch<Value>, method: StaticString, label: String?, callSite: CallSite
    ) {
        self.awaited = awaited
        self.body = body
        self.method = method
        self.label = label
        self.callSite = callSite
    }

    deinit {
        self.awaited.workReleased {
            DroppedWorkError(method: self.method.description, label: self.label, callSite: self.callSite)
        }
    }
}

extension AwaitedWork where Body == @Sendable () throws -> Value {
    /// Runs the work and ends the await with its outcome.
    package func run() {
        self.awaited.finish(Result { try self.body() })
    }
}

extension AwaitedWork where Body == @MainActor @Sendable () throws -> Value {
    /// Runs the work on the main actor and ends the await with its outcome.
    @MainActor package func run() {
        self.awaited.finish(Result { try self.body() })
    }
}
