import TaskDispatch

/// A task started with ``ManualDispatcher/startTask(label:callSite:operation:)``, as its own code sees it: bound in
/// `TaskTracking.scope` around the task's operation, it makes the waits its awaitable dispatches and clock sleeps
/// report, and it is the task's start gate (the body waits in ``waitForStart(isolation:)`` until ``startRan(in:)``).
///
/// `@unchecked Sendable`: its mutable fields are read and written only under the lock of ``storage``.
final class TrackedTaskScope: TaskTrackingScope, @unchecked Sendable {
    #if DEBUG
        /// The body's wait at the gate: checked in debug builds (the tests), so a double resume traps.
        typealias StartContinuation = CheckedContinuation<Void, any Error>
    #else
        /// The body's wait at the gate: unchecked in release builds, where a checked continuation of the resilient
        /// Concurrency library makes every copy of the gate's state a call through value witnesses.
        typealias StartContinuation = UnsafeContinuation<Void, any Error>
    #endif

    /// The lock and state of the dispatcher that tracks the task.
    let storage: Storage
    /// The task's identity in the dispatcher's records.
    let id: UInt64
    /// The task's label, for the work it dispatches without a call site of its own (a clock sleep).
    let label: String?
    /// Where the task was started, for the same work.
    let callSite: CallSite
    /// Whether the dispatcher counts the jobs of the task's child tasks (see `TrackedTasks.ChildJobs`): if not, its
    /// waits must be told from those of other tasks inside it.
    let countsChildJobs: Bool
    /// What the body's wait ends with: `nil` while the start task has not run, `success` once it ran, `failure` if
    /// the task was cancelled before its start ran, and the start with it.
    private var outcome: Result<Void, any Error>?
    /// The body, suspended at the gate. Taken by exactly one of ``startRan(in:)`` (into `admitted`),
    /// ``cancelStart(in:)`` and ``releaseFromCaller()``.
    private var waiting: StartContinuation?
    /// The body's wait that ``startRan(in:)`` let through, with its outcome, taken after unlocking by
    /// ``resumeAdmitted()``.
    private var admitted: (StartContinuation, Result<Void, any Error>)?
    /// Whether the body may still run on its creator's stack (begun with `Task.immediate`, until
    /// ``releaseFromCaller()``): only that resumes it meanwhile, or a start run by another thread would run the
    /// operation inside `startTask`.
    var heldForCaller = false
    /// The start task in the dispatcher's schedule, to cancel it with the task; set before the task exists.
    var startTask: ScheduledTask?
    /// The tracked task itself (`TaskTracking.currentTask`), noted at the gate: a wait made in another task (a child
    /// task, or a `Task { }` it created) is told from the task's own.
    private(set) var taskIdentity: UInt = 0

    init(storage: Storage, id: UInt64, label: String?, callSite: CallSite, countsChildJobs: Bool) {
        self.storage = storage
        self.id = id
        self.label = label
        self.callSite = callSite
        self.countsChildJobs = countsChildJobs
    }

    /// The scope of the current code, if it runs in a task that a ``ManualDispatcher`` tracks.
    static var current: TrackedTaskScope? { TaskTracking.scope as? TrackedTaskScope }

    func wait(on description: String) -> any TaskTrackingWait { OwnedWait(scope: self, description: description) }

    nonisolated(nonsending) func value<Success: Sendable>(of task: Task<Success, any Error>) async throws -> Success {
        try await self.storage.value(of: task, awaitedBy: self)
    }

    /// The current task (`TaskTracking.currentTask`) where the dispatcher must tell it from the tracked task; 0 where
    /// it counts the child tasks' jobs, so that a nonisolated task does not pay for the call into the runtime.
    var currentTask: UInt { self.countsChildJobs ? 0 : TaskTracking.currentTask }

    /// The current task, if this scope counts child jobs and the task prefers another task executor
    /// (`withTaskExecutorPreference`, `Task(executorPreference:)`, `addTask(executorPreference:)`) or none (a
    /// `Task { }` created inside, which inherits no preference): its jobs, and its children's, then run uncounted.
    var currentTaskOffTheExecutor: TrackedTasks.WaiterOffTheExecutor? {
        guard self.countsChildJobs, #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return nil }
        return withUnsafeCurrentTask { task in
            guard let task else { return nil }
            let preferred = task.unownedTaskExecutor  // a call into the runtime: read once
            guard preferred != self.asUnownedTaskExecutor() else { return nil }
            let childJobs: TrackedTasks.ChildJobs =
                preferred == nil ? .uncountedInUnstructuredTask : .uncountedUnderAnotherExecutor
            return .init(address: unsafeBitCast(task, to: UInt.self), childJobs: childJobs)
        }
    }

    /// The task's operation returned, or threw `error` (`nil` for an error that is not the operation's). Not inlined
    /// into the task's async body, whose frame the task allocates: the storage's work there would enlarge it.
    @inline(never)
    func finished(error: (any Error)?) {
        self.storage.changeTrackedTasks { $0.trackedTaskFinished(self.id, error: error) }
    }

    // MARK: - The start gate

    /// The start task ran: records the start and admits the body's wait, for ``resumeAdmitted()`` (unless the body is
    /// still held for its creator: then ``releaseFromCaller()`` lets it through). Call under the lock of ``storage``.
    func startRan(in schedule: inout Schedule) {
        schedule.tracked.markStarted(self.id, at: schedule.now)
        // A start that runs was not cancelled: the schedule hands a task out to run or to cancel, not both.
        guard self.outcome == nil else { return }
        // But its task may have been, before the body reached the gate to cancel the start: it stops there all the same.
        let cancelled = schedule.tracked.isTaskCancelled(self.id)
        if cancelled { schedule.tracked.markStartCancelled(self.id) }
        let outcome: Result<Void, any Error> = cancelled ? .failure(CancellationError()) : .success(())
        self.outcome = outcome
        if !self.heldForCaller, let waiting = self.waiting.take() { self.admitted = (waiting, outcome) }
    }

    /// Lets the body through the gate that ``startRan(in:)`` opened; call after unlocking, on the same thread.
    func resumeAdmitted() {
        guard let (continuation, outcome) = self.admitted.take() else { return }
        continuation.resume(with: outcome)
    }

    /// Suspends the body until the start task runs; throws `CancellationError` if the task was cancelled first,
    /// which cancels the start. It runs on the caller's `isolation`, and the body resumes there.
    func waitForStart(isolation: isolated (any Actor)? = #isolation) async throws {
        try await withTaskCancellationHandler {
            _ = isolation  // isolated to the caller's isolation, like the function: no hop to the global executor
            return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                #if DEBUG
                    let continuation = CheckedContinuation(continuation: continuation)
                #endif
                self.storage.send(.parked(self, continuation, task: self.currentTask))
            }
        } onCancel: {
            self.storage.send(.startCancelled(self))
        }
    }

    /// The body (the current task, `task`) reached the gate: the outcome to go on with at once if the start has run
    /// (and the body is off its creator's stack) or the task was cancelled; otherwise (`nil`) it waits. Call under the
    /// lock of ``storage``.
    func park(_ continuation: StartContinuation, task: UInt, in schedule: inout Schedule) -> Result<Void, any Error>? {
        self.taskIdentity = task
        schedule.tracked.markParked(self.id)
        if !self.heldForCaller, let outcome = self.outcome { return outcome }
        self.waiting = continuation
        return nil
    }

    /// The task was cancelled: cancels the start if it has not run, and returns its closure (to release outside
    /// the lock) and the wait to fail. The records say so in the same section: the body now runs on its own to its
    /// end, and no drain may take it for settled meanwhile. Call under the lock of ``storage``.
    func cancelStart(in schedule: inout Schedule) -> (DispatchedTask.Work?, StartContinuation?) {
        // A start the dispatcher's release cancelled has no outcome yet: the body still waits for this cancel.
        guard let task = self.startTask, self.outcome == nil, task.state != .started else { return (nil, nil) }
        let released = schedule.cancel(task)
        self.outcome = .failure(CancellationError())
        schedule.tracked.markStartCancelled(self.id)
        return (released, self.heldForCaller ? nil : self.waiting.take())
    }

    /// `Task.immediate` has returned, so the body is off its creator's stack: lets it go on if its start ran or the
    /// task was cancelled meanwhile. Call under the lock of ``storage``, then resume what it returns.
    func releaseFromCaller() -> (continuation: StartContinuation, outcome: Result<Void, any Error>)? {
        self.heldForCaller = false
        // Still pending: `startRan(in:)` (through `admitted`) or `cancelStart(in:)` lets it go on.
        guard let outcome = self.outcome, let continuation = self.waiting.take() else { return nil }
        return (continuation, outcome)
    }
}

/// One wait of a tracked task on a task its dispatcher holds: recorded by the dispatcher when it accepts that task
/// (at most once), and ended before the awaiting task is resumed.
///
/// `@unchecked Sendable`: ``state`` is read and written only under the lock of ``scope``'s storage.
final class OwnedWait: TaskTrackingWait, @unchecked Sendable {
    /// Where the wait stands in the tracking dispatcher's records.
    enum State {
        /// Not recorded yet: the awaited task has not reached the tracking dispatcher.
        case unrecorded
        /// Recorded, and not yet seen to end.
        case recorded
        /// Ended: a later dispatch inside the same awaitable call must not record it again.
        case ended
    }

    /// The awaiting tracked task.
    let scope: TrackedTaskScope
    /// What is awaited, for diagnostics.
    let description: String
    /// The task that waits (`TaskTracking.currentTask`): the tracked task itself, or a task running inside it.
    let waiter: UInt
    /// The waiting task, if it runs off the executor that counts the tracked task's jobs (see `TrackedTasks.ChildJobs`).
    private let waiterOffTheExecutor: TrackedTasks.WaiterOffTheExecutor?
    /// Where the wait stands; see ``State``.
    private var state = State.unrecorded

    /// A wait of `scope`'s task on `description`, made by the current task, not recorded yet.
    init(scope: TrackedTaskScope, description: String) {
        self.scope = scope
        self.description = description
        self.waiter = scope.currentTask
        self.waiterOffTheExecutor = scope.currentTaskOffTheExecutor
    }

    /// Records the wait in `schedule`, under the lock of `storage` (the dispatcher accepting the awaited task), once,
    /// and only if it is a wait of that dispatcher's tracked tasks (not another's behind a decorator).
    func recordBegin(in schedule: inout Schedule, of storage: Storage) {
        // The owner first: `state` may be read only under the lock of the dispatcher that made the wait.
        guard self.scope.storage === storage, self.state == .unrecorded else { return }
        schedule.tracked.ownedWaitBegan(
            self.scope.id, on: self.description, byAnotherTask: self.waiter != self.scope.taskIdentity,
            offTheExecutor: self.waiterOffTheExecutor)
        self.state = .recorded
    }

    /// The awaited work ran or was cancelled (`cancelled`, kept as the task's last event, names a cancelled task that
    /// goes on looping): ends the wait in the dispatcher's records and wakes the calls the change satisfies.
    func end(cancelled: Bool) {
        self.scope.storage.changeTrackedTasks { schedule in
            defer { self.state = .ended }
            switch self.state {
            case .ended: break  // a cancel ended it before the resume did
            case .recorded: schedule.tracked.ownedWaitEnded(self.scope.id, on: self.description, cancelled: cancelled)
            // Cancelled before any dispatcher took the work (or another dispatcher's work): it ended at once.
            case .unrecorded: if cancelled { schedule.tracked.waitEndedAtOnce(self.scope.id, on: self.description) }
            }
        }
    }
}
