import Dispatch
import TaskDispatch

/// A value that arrives once, from any thread, and one wait for it bounded in real time.
///
/// The wait never blocks a thread: it suspends on a continuation that ``fulfil(_:)`` or a timer on a global queue
/// resumes, whichever comes first.
final class ContractSignal<Value: Sendable>: Sendable {
    private struct State: Sendable {
        var value: Value?
        var waiter: CheckedContinuation<Value?, Never>?
    }

    private let state = LockedValue(State())

    /// Delivers `value`; later calls do nothing.
    func fulfil(_ value: Value) {
        let waiter = self.state.withLock { state -> CheckedContinuation<Value?, Never>? in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    /// Suspends until the value arrives or `deadline` passes in real time; call once.
    ///
    /// - Returns: The value, or `nil` if the deadline passed first.
    func wait(until deadline: ContinuousClock.Instant) async -> Value? {
        await withCheckedContinuation { continuation in
            let arrived = self.state.withLock { state -> Value? in
                if let value = state.value { return value }
                state.waiter = continuation
                return nil
            }
            if let arrived {
                continuation.resume(returning: arrived)
                return
            }
            DispatchQueue.global().asyncAfter(deadline: (deadline - ContinuousClock.now).dispatchDeadline) {
                let waiter = self.state.withLock { state in
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiter?.resume(returning: nil)
            }
        }
    }
}

/// Cancels a Swift task once it is known, or as soon as it is: the closure that asks may run before the code that
/// created the task has stored it.
final class TaskCancelRequest: Sendable {
    private let state = LockedValue<(cancel: (@Sendable () -> Void)?, requested: Bool)>((nil, false))

    /// Stores how to cancel the task; cancels it at once if that was already asked.
    func hold(_ cancel: @escaping @Sendable () -> Void) {
        let requested = self.state.withLock { state in
            state.cancel = cancel
            return state.requested
        }
        if requested { cancel() }
    }

    /// Cancels the task, now or when it is stored.
    func cancel() {
        let cancel = self.state.withLock { state in
            state.requested = true
            return state.cancel
        }
        cancel?()
    }
}

/// A flag set from any thread.
final class ContractFlag: Sendable {
    private let state = LockedValue(false)

    func set() { self.state.withLock { $0 = true } }
    var isSet: Bool { self.state.withLock { $0 } }
}

/// Forwards to the subject's dispatcher and reports its first dispatch once it has returned; optionally cancels the
/// calling Swift task right after that dispatch returned, on the caller's stack, so the task cannot have started.
struct ObservedDispatcher: TaskDispatcher {
    let base: any TaskDispatcher
    let dispatched = ContractSignal<Bool>()
    let cancelsCallerAfterDispatch: Bool

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let handle = self.base.dispatch(task)
        if self.cancelsCallerAfterDispatch {
            withUnsafeCurrentTask { $0?.cancel() }
        }
        self.dispatched.fulfil(true)
        return handle
    }
}

/// The error the contract's closures throw.
struct ContractError: Error, Equatable {}
