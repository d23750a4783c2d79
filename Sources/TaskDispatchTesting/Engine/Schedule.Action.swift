import Dispatch
import TaskDispatch

extension Schedule {
    /// What ``Storage`` does after an event's critical section, outside the lock.
    enum Action {
        /// Perform the effects; nothing more.
        case proceed(Effects)
        /// Run this task (the caller holds the claim), then ask for the next.
        case run(Step)
        /// This thread now holds the claim for an auto-drain: perform the effects, then drain.
        case drain(Effects)
        /// This thread now holds the claim to run the due tasks of the one waiting async drain (see
        /// ``claimForWaitingSettle(thread:)``).
        case assist
        /// Throw this failure. A run that holds the claim releases it first.
        case fail(Failure)
        /// A run that pauses between tasks stops here, holding the claim, for the caller's condition.
        case paused

        static let none = Action.proceed(Effects())

        /// The effects to perform.
        var effects: Effects {
            switch self {
            case .proceed(let effects), .drain(let effects): effects
            case .run, .assist, .fail, .paused: Effects()
            }
        }
    }

    /// What an event leaves to do outside the lock; empty on the hot paths.
    struct Effects {
        /// The waiters the event woke, to resume in order.
        var woken: [WaitResumer]?
        /// Wake the synchronous run methods blocked until the claim is released.
        var broadcast = false
        /// Set the waiters' timer for this deadline.
        var arm: DispatchTime?
        /// A tracked task's body to let through its start gate, or to fail there.
        var gate: (continuation: TrackedTaskScope.StartContinuation, outcome: Result<Void, any Error>)?
        /// A closure released by the event (a cancelled task's), dropped outside the lock.
        var released: DispatchedTask.Work?
        /// A note for standard error.
        var report: String?
        /// A package test's observer, called as the test would call it: outside the tracked task.
        var observe: (@Sendable () -> Void)?
    }
}
