extension DispatcherContract {
    /// One rule of the `TaskDispatcher` contract, as ``DispatcherContract/check(rules:timeLimitPerRule:fileID:line:_:)``
    /// checks it: ``text`` states it, and <doc:WritingYourOwnDispatcher> says how the check tries to break it.
    ///
    /// New rules are added as new cases; a `switch` over this type should keep a `default:` branch.
    public enum Rule: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Each accepted task runs exactly once, unless cancelled.
        case exactlyOnce

        /// `dispatch(_:)` never runs the task on the caller's stack, and does not wait for it.
        case neverInline

        /// Foreground tasks run on the main actor, one at a time, in dispatch order among equal delays.
        case foregroundOnMainActorInOrder

        /// A task never starts before its delay has passed.
        case delayIsLowerBound

        /// A cancelled task never runs, and a cancel that races with the start leaves the task fully run or not run.
        case cancellationIsAllOrNothing

        /// A cancel before the start stops the task.
        case cancelBeforeTheStartStopsTheTask

        /// The awaitable dispatches return what the closure returned, or throw what it threw.
        case awaitableDispatchesDeliverTheOutcome

        /// The awaitable dispatches follow the awaiting task's cancellation.
        case awaitableDispatchesFollowCancellation

        /// A decorator over a `ManualDispatcher` forwards ``TaskDispatcher/clock``.
        case decoratorForwardsTheClock

        /// A decorator over a `ManualDispatcher` forwards ``TaskDispatcher/startTask(label:callSite:operation:)``.
        case decoratorForwardsStartTask

        /// A decorator over a `ManualDispatcher` keeps a tracked task's wait on the work it forwards.
        case decoratorKeepsAwaitedWaits

        /// A repeating series (``TaskDispatcher/background(every:priority:after:label:fileID:line:_:)``) ticks at its due
        /// times, never twice for one tick, and stops at `cancel()` (1.1).
        case repeatingWorkTicksAtItsDueTimes

        /// A short name for the rule, as an error names it, such as `"exactly once"`.
        public var name: String {
            switch self {
            case .exactlyOnce: "exactly once"
            case .neverInline: "never inline"
            case .foregroundOnMainActorInOrder: "foreground on the main actor, in order"
            case .delayIsLowerBound: "a delay is a lower bound"
            case .cancellationIsAllOrNothing: "cancellation is all or nothing"
            case .cancelBeforeTheStartStopsTheTask: "a cancel before the start stops the task"
            case .awaitableDispatchesDeliverTheOutcome: "awaitable dispatches deliver the outcome"
            case .awaitableDispatchesFollowCancellation: "awaitable dispatches follow cancellation"
            case .repeatingWorkTicksAtItsDueTimes: "repeating work ticks at its due times"
            case .decoratorForwardsTheClock: "a decorator forwards the clock"
            case .decoratorForwardsStartTask: "a decorator forwards startTask"
            case .decoratorKeepsAwaitedWaits: "a decorator keeps a tracked task's wait"
            }
        }

        /// The rule as the `TaskDispatcher` contract states it.
        public var text: String {
            switch self {
            case .exactlyOnce:
                "Each task accepted by dispatch(_:) runs at most once. It runs exactly once unless its TaskHandle cancelled it first."
            case .neverInline:
                "dispatch(_:) returns before the task starts; it never runs the task on the caller's stack (the documented exceptions are ManualDispatcher's: its auto-drain and auto-advance modes, and work that a tracked task on the main actor awaits while an async drain waits)."
            case .foregroundOnMainActorInOrder:
                "Foreground tasks run on the main actor, one at a time, in the order they were dispatched (among those with equal delays)."
            case .delayIsLowerBound:
                "A task never starts before its delay has passed; zero or a negative delay means \"as soon as possible\"."
            case .cancellationIsAllOrNothing:
                "A cancelled task never runs, and a cancel that races with the start leaves the task either fully run or not run at all; cancel() returns true exactly when it stopped the task."
            case .cancelBeforeTheStartStopsTheTask:
                "cancel() on the handle of a task that has not started stops it: it returns true, and the task never runs."
            case .awaitableDispatchesDeliverTheOutcome:
                "runInBackground and runOnMainActor return what their closure returned, or throw what it threw."
            case .awaitableDispatchesFollowCancellation:
                "When the task awaiting runInBackground or runOnMainActor is cancelled before the closure starts, the closure never runs and the await throws CancellationError; once the closure has started, it runs to the end and its value is returned."
            case .repeatingWorkTicksAtItsDueTimes:
                "A series started with background(every:) or foreground(every:) runs its k-th tick no earlier than its start + k × interval on the dispatcher's clock, runs each tick once, and runs none after cancel() on its handle."
            case .decoratorForwardsTheClock:
                "A decorator over a ManualDispatcher forwards clock, so that a sleep through it waits on the virtual time of the dispatcher underneath."
            case .decoratorForwardsStartTask:
                "A decorator over a ManualDispatcher forwards startTask, so that the dispatcher underneath holds the task's start and tracks the task until it finishes."
            case .decoratorKeepsAwaitedWaits:
                "A decorator over a ManualDispatcher forwards each task synchronously, inside the dispatch(_:) call that received it, so that a tracked task awaiting work through it reads as waiting on the dispatcher's own work."
            }
        }

        /// The rule's ``name``.
        public var description: String { self.name }
    }
}
