/// The meeting point of one awaitable dispatch: the awaiting task's continuation, the dispatched task's handle,
/// and whether the awaiting task was cancelled.
///
/// Three parties may act on it, each on its own thread: the awaiting task (``start(_:dispatch:)``), the
/// dispatched task when it runs (``finish(_:)``), and the awaiting task's cancellation handler
/// (``cancel()``). The continuation is taken out under the lock before it is resumed, so it is resumed at most
/// once; it is resumed at least once because the dispatcher runs the task exactly once unless ``cancel()``'s
/// call to `TaskHandle.cancel()` returned `true`, and that is the one case in which this type resumes it with
/// `CancellationError`.
package final class AwaitedDispatch<Value: Sendable>: TaskAwaiter {
    private struct State: Sendable {
        var continuation: CheckedContinuation<Value, any Error>?
        var handle: TaskHandle?
        var isCancelled = false
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
            continuation.resume(throwing: CancellationError())
            return
        }
        let handle = dispatch()
        let cancelledMeanwhile = self.state.withLock { state -> Bool in
            guard !state.isCancelled else { return true }
            state.handle = handle
            return false
        }
        if cancelledMeanwhile && handle.cancel() {
            self.finish(.failure(CancellationError()))
        }
    }

    /// Resumes the awaiting task with the task's outcome; does nothing if it was resumed already.
    package func finish(_ result: Result<Value, any Error>) {
        let continuation = self.state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
        guard let continuation else { return }
        // Before the resume: once resumed, the task is running again, no longer waiting on the dispatcher.
        self.trackedWait?.end()
        continuation.resume(with: result)
    }

    /// Ends the await with `error`: the dispatcher cancelled the awaited task, which therefore never finishes it.
    package func fail(with error: any Error) {
        self.finish(.failure(error))
    }

    /// The awaiting task was cancelled: cancels the dispatched task if it has not started, and if that
    /// stopped it, resumes the awaiting task with `CancellationError`. A task that started runs to the end.
    package func cancel() {
        let handle = self.state.withLock { state in
            state.isCancelled = true
            return state.handle
        }
        if let handle, handle.cancel() {
            self.finish(.failure(CancellationError()))
        }
    }
}
