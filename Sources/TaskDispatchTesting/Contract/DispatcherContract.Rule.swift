extension DispatcherContract {
    /// One rule of the `TaskDispatcher` contract, as ``DispatcherContract/check(rules:timeLimitPerRule:fileID:line:_:)``
    /// checks it.
    ///
    /// The cases follow the contract on the `TaskDispatcher` protocol, one case per rule, in the order the
    /// check runs them. New rules are added as new cases; a `switch` over this type should keep a `default:`
    /// branch.
    public enum Rule: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Each accepted task runs exactly once, unless cancelled.
        ///
        /// Checked with hundreds of immediate and delayed tasks of both contexts: every one must run within the
        /// time limit, and none may run twice.
        case exactlyOnce

        /// `dispatch(_:)` never runs the task on the caller's stack, and does not wait for it.
        ///
        /// Checked from a background thread and from the main actor: a task that starts on a thread while one of
        /// the check's `dispatch(_:)` calls is in progress there (its own, or a later one) ran on the caller's stack
        /// (a task the dispatcher starts with `Task { }` runs elsewhere, and passes); a foreground task dispatched
        /// from the main actor must also not start before the dispatching code gives the main actor up; and a task
        /// that waits up to 5 s for its own dispatch call to return must not wait in vain (left out when the rule
        /// has less than 2 s left).
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
        /// delays from 1 to 50 ms and one of 1.05 s in both contexts (a dispatcher that drops the whole seconds
        /// of a delay runs that one early), and with zero and negative delays, which must still run. On a driven
        /// clock (a subject with a driver), where waiting costs nothing, one delay of an hour more in each context
        /// catches a dispatcher that caps long delays.
        case delayIsLowerBound

        /// A cancelled task never runs, and a cancel that races with the start leaves the task fully run or not
        /// run at all; `cancel()` and `isCancelled` say which.
        ///
        /// Checked by cancelling delayed tasks before they are due, by cancelling immediate background tasks
        /// right after dispatching them (racing their start), and by cancelling a task that has run.
        case cancellationIsAllOrNothing

        /// A cancel before the start stops the task: `cancel()` returns `true` and the task never runs.
        ///
        /// Checked with immediate foreground tasks dispatched and cancelled in one turn of the main actor (and,
        /// on a ``DispatcherContract/Subject/manual(_:)`` subject, immediate background tasks cancelled before the
        /// time passes), and with delayed tasks of both contexts cancelled well before their delay has passed.
        /// Skipped for immediate tasks when the subject runs tasks inline.
        case cancelBeforeTheStartStopsTheTask

        /// `runInBackground` and `runOnMainActor` return what the closure returned, or throw what it threw.
        ///
        /// Checked with immediate and delayed closures of both forms that return a value or throw an error.
        case awaitableDispatchesDeliverTheOutcome

        /// The awaitable dispatches follow the awaiting task's cancellation: before the start the closure never runs
        /// and the await throws `CancellationError`; after the start the closure runs to the end and its value is
        /// returned.
        ///
        /// Checked by cancelling the awaiting task while a delayed closure waits, right after an immediate dispatch
        /// returns (from the main actor for `runOnMainActor`), and from inside the running closure.
        case awaitableDispatchesFollowCancellation

        /// A decorator over a `ManualDispatcher` forwards ``TaskDispatcher/clock``: a sleep on it is a timer on the
        /// dispatcher underneath, woken by its virtual time.
        ///
        /// Checked only for ``DispatcherContract/Subject/manual(_:over:)`` subjects.
        case decoratorForwardsTheClock

        /// A decorator over a `ManualDispatcher` forwards ``TaskDispatcher/startTask(label:callSite:operation:)``:
        /// a task started through it is tracked by the dispatcher underneath, its start a step.
        ///
        /// Checked only for ``DispatcherContract/Subject/manual(_:over:)`` subjects.
        case decoratorForwardsStartTask

        /// A decorator over a `ManualDispatcher` keeps a tracked task's wait: a tracked task awaiting
        /// `runInBackground(after:)` through it reads as settled, so the async drains move the clock to the work.
        ///
        /// Checked only for ``DispatcherContract/Subject/manual(_:over:)`` subjects.
        case decoratorKeepsAwaitedWaits

        /// A repeating series (``TaskDispatcher/background(every:priority:after:label:fileID:line:_:)``) ticks at its due
        /// times, never twice for one tick, and stops at `cancel()` (1.1).
        ///
        /// Checked with a background and a foreground series every 20 ms: three ticks, each once, none after the
        /// cancel, and each no earlier than start + k × 20 ms on the dispatcher's clock (where the check's driver
        /// moves that clock, or it is the real clock of a real-time subject).
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
                "dispatch(_:) returns before the task starts; it never runs the task on the caller's stack (the documented exceptions are ManualDispatcher's: its auto-drain mode, and work that a tracked task on the main actor awaits while an async drain waits)."
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
        public var description: String {
            self.name
        }
    }
}
