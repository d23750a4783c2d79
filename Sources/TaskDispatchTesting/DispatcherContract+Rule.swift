extension DispatcherContract {
    /// One rule of the `TaskDispatcher` contract, as ``DispatcherContract/check(rules:timeLimitPerRule:fileID:line:_:)``
    /// checks it.
    ///
    /// The cases follow the contract on the `TaskDispatcher` protocol, one case per rule, in the order the
    /// check runs them. The rules for the awaitable dispatches are added as new cases when those dispatches
    /// land in `TaskDispatch`; a `switch` over this type should keep a `default:` branch.
    public enum Rule: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Each accepted task runs exactly once, unless cancelled.
        ///
        /// Checked with hundreds of immediate and delayed tasks of both contexts: every one must run within the
        /// time limit, and none may run twice.
        case exactlyOnce

        /// `dispatch(_:)` never runs the task on the caller's stack.
        ///
        /// Checked by marking the dispatching code with a task-local value that only code on the caller's stack
        /// can see, from a background thread and from the main actor; a foreground task dispatched from the main
        /// actor must also not start before the dispatching code gives the main actor up.
        case neverInline

        /// Foreground tasks run on the main actor, one at a time, in dispatch order among equal delays.
        ///
        /// Checked with a burst of immediate foreground tasks, four bursts with one equal delay, and a mix of delays
        /// in which the later-due task is dispatched first: each group of equal delays must run in dispatch
        /// order, and every task on the main queue.
        case foregroundOnMainActorInOrder

        /// A task never starts before its delay has passed; zero or a negative delay means "as soon as possible".
        ///
        /// Checked on the dispatcher's own clock (real time, or the virtual time of a test dispatcher) with
        /// delays from 1 to 50 ms in both contexts, and with zero and negative delays, which must still run.
        case delayIsLowerBound

        /// A cancelled task never runs, and a cancel that races with the start leaves the task fully run or not
        /// run at all; `cancel()` and `isCancelled` say which.
        ///
        /// Checked by cancelling delayed tasks before they are due, by cancelling immediate background tasks
        /// right after dispatching them (racing their start), and by cancelling a task that has run.
        case cancellationIsAllOrNothing

        /// A short name for the rule, as an error names it, such as `"exactly once"`.
        public var name: String {
            switch self {
            case .exactlyOnce: "exactly once"
            case .neverInline: "never inline"
            case .foregroundOnMainActorInOrder: "foreground on the main actor, in order"
            case .delayIsLowerBound: "a delay is a lower bound"
            case .cancellationIsAllOrNothing: "cancellation is all or nothing"
            }
        }

        /// The rule as the `TaskDispatcher` contract states it.
        public var text: String {
            switch self {
            case .exactlyOnce:
                "Each task accepted by dispatch(_:) runs at most once. It runs exactly once unless its TaskHandle cancelled it first."
            case .neverInline:
                "dispatch(_:) returns before the task starts; it never runs the task on the caller's stack (the one documented exception is ManualDispatcher's auto-drain mode)."
            case .foregroundOnMainActorInOrder:
                "Foreground tasks run on the main actor, one at a time, in the order they were dispatched (among those with equal delays)."
            case .delayIsLowerBound:
                "A task never starts before its delay has passed; zero or a negative delay means \"as soon as possible\"."
            case .cancellationIsAllOrNothing:
                "A cancelled task never runs, and a cancel that races with the start leaves the task either fully run or not run at all; cancel() returns true exactly when it stopped the task."
            }
        }

        /// The rule's ``name``.
        public var description: String {
            self.name
        }
    }
}
