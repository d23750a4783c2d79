import Dispatch
import TaskDispatch

/// The value of a task awaited for a bounded time: `value(of:)` for a task its dispatcher did not start, which
/// nothing of the dispatcher's can make finish.
///
/// The first of three outcomes resumes the caller: the task's result, the deadline, or the caller's cancellation.
/// A task that has not finished at the deadline is left running; a small task of this type awaits its result
/// until it ends, and drops it.
final class BoundedValue<Success: Sendable>: Sendable {
    private struct State: Sendable {
        var continuation: CheckedContinuation<Success?, any Error>?
        /// The outcome that came before the continuation was stored (a cancellation), if any.
        var early: Result<Success?, any Error>?
        var isResumed = false
    }

    private let state = LockedValue(State())

    /// `task`'s value, or `nil` if it has not finished at `deadline`.
    ///
    /// - Throws: What `task` threw, or `CancellationError` if the caller is cancelled first.
    static func value(of task: Task<Success, any Error>, within deadline: DispatchTime) async throws -> Success? {
        let race = BoundedValue()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation)
                Task { race.resume(with: await task.result.map { Optional($0) }) }
                DispatchQueue.global().asyncAfter(deadline: deadline) { race.resume(with: .success(nil)) }
            }
        } onCancel: {
            race.resume(with: .failure(CancellationError()))
        }
    }

    private func start(_ continuation: CheckedContinuation<Success?, any Error>) {
        let early = self.state.withLock { state -> Result<Success?, any Error>? in
            guard let early = state.early else {
                state.continuation = continuation
                return nil
            }
            return early
        }
        if let early { continuation.resume(with: early) }
    }

    /// Resumes the caller with `outcome` if nothing has yet.
    private func resume(with outcome: Result<Success?, any Error>) {
        let continuation = self.state.withLock { state -> CheckedContinuation<Success?, any Error>? in
            guard !state.isResumed else { return nil }
            state.isResumed = true
            guard let continuation = state.continuation else {
                state.early = outcome  // before the continuation was stored: `start` resumes with it
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(with: outcome)
    }
}
