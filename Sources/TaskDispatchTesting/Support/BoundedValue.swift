import Dispatch
import TaskDispatch

/// The value of a task awaited for a bounded time: `value(of:)` for a task its dispatcher did not start, which
/// nothing of the dispatcher's can make finish.
///
/// The first of three outcomes resumes the caller: the task's result, the deadline, or the caller's cancellation.
/// A task that has not finished at the deadline is left running; a small task of this type awaits its result
/// until it ends, and drops it.
final class BoundedValue<Success: Sendable>: Sendable {
    private enum State: Sendable {
        /// Neither the caller's continuation nor an outcome has come.
        case idle
        /// The caller waits.
        case waiting(CheckedContinuation<Success?, any Error>)
        /// An outcome came before the continuation (a cancellation): ``start(_:)`` resumes with it.
        case early(Result<Success?, any Error>)
        /// The caller was resumed, or will be by ``start(_:)``: later outcomes are dropped.
        case ended
    }

    private let state = LockedValue(State.idle)

    /// `task`'s value, or `nil` if it has not finished at `deadline`.
    ///
    /// - Throws: What `task` threw, or `CancellationError` if the caller is cancelled first.
    static func value<Failure>(of task: Task<Success, Failure>, within deadline: DispatchTime) async throws -> Success?
    {
        let race = BoundedValue()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation)
                Task { race.resume(with: await task.result.map { Optional($0) }.mapError { $0 as any Error }) }
                DispatchQueue.global().asyncAfter(deadline: deadline) { race.resume(with: .success(nil)) }
            }
        } onCancel: {
            race.resume(with: .failure(CancellationError()))
        }
    }

    private func start(_ continuation: CheckedContinuation<Success?, any Error>) {
        let early = self.state.withLock { state -> Result<Success?, any Error>? in
            guard case .early(let outcome) = state else {
                state = .waiting(continuation)
                return nil
            }
            state = .ended
            return outcome
        }
        if let early { continuation.resume(with: early) }
    }

    /// Resumes the caller with `outcome` if nothing has yet.
    private func resume(with outcome: Result<Success?, any Error>) {
        let continuation = self.state.withLock { state -> CheckedContinuation<Success?, any Error>? in
            switch state {
            case .idle:
                state = .early(outcome)
                return nil
            case .waiting(let continuation):
                state = .ended
                return continuation
            case .early, .ended:
                return nil
            }
        }
        continuation?.resume(with: outcome)
    }
}
