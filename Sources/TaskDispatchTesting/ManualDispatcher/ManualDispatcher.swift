import Dispatch
public import TaskDispatch

/// A dispatcher for tests: it holds every task until the test runs it, one step at a time or all at once,
/// on a virtual clock that moves only when the test says so.
///
/// Give it to the code under test instead of `QueueDispatcher`. Nothing runs behind the test's back, so the
/// test can check the state between the background step and the foreground step:
///
/// ```swift
/// @Test @MainActor func showsParsedItems() throws {
///     let dispatcher = ManualDispatcher()
///     let model = FeedModel(dispatcher: dispatcher)
///
///     model.refresh()
///     #expect(model.isLoading)                   // nothing has run yet
///
///     try dispatcher.runNextBackground()         // parse
///     #expect(model.items.isEmpty)               // parsed, not yet delivered
///
///     try dispatcher.runNextForeground()         // deliver
///     #expect(model.items.count == 3)
///     try dispatcher.verifyIdle()
/// }
/// ```
///
/// When order does not matter, ``runUntilIdle()`` drains everything, and ``Mode/autoDrain`` or ``Mode/autoAdvance``
/// run tasks as they come. In async code the same names are async and also wait for tasks started with
/// ``startTask(label:callSite:operation:)`` to settle (<doc:TestingAsyncCode>).
///
/// Tasks run on the thread that calls a run method, foreground tasks always on the main actor, by (due time,
/// dispatch order) unless ``order`` says otherwise. Any thread may dispatch at any time; misuse throws
/// ``ManualDispatcherError`` rather than hang or crash. End each test with ``verifyIdle()`` or the
/// `verifiesIdleDispatchers` trait: a released dispatcher reports its pending tasks and cancels them, but a pending
/// closure that holds the dispatcher keeps it alive. See <doc:ManualDispatcherReference>.
public final class ManualDispatcher: TaskDispatcher, ScopeCarrying {
    /// The engine and its lock, which every operation takes through it.
    let storage: Storage

    /// This dispatcher's entry in the ``ManualDispatcherRegistry`` that was tracking when it was created, if any.
    let registration: ManualDispatcherRegistry.Registration?

    /// The runaway limit a dispatcher has unless its initializer says otherwise.
    static let defaultRunawayLimit = 100_000

    /// The longest real time an async step, drain or ``value(of:)-(Task<Success,Error>)`` waits for the code under
    /// test before it throws; only a failing test spends it (see <doc:Limits>).
    public let waitLimit: Duration

    /// The wait limit of a dispatcher created without one: 10 seconds, or the seconds that the environment variable
    /// `TASKDISPATCH_WAIT_LIMIT` gives (such as `60`, for a whole suite on a slow CI machine), read once per process.
    ///
    /// A value that is not a number of seconds from a nanosecond to a year is reported on standard error, and 10
    /// seconds applies (see <doc:Limits#The-wait-limit>).
    public static let defaultWaitLimit: Duration = waitLimit(
        fromEnvironment: environmentValue(waitLimitVariable), report: writeToStandardError)

    /// The environment variable that sets ``defaultWaitLimit``.
    static let waitLimitVariable = "TASKDISPATCH_WAIT_LIMIT"

    /// The wait limit that `value`, the environment variable's, gives: 10 seconds when it is unset, and when it is not
    /// a number of seconds from a nanosecond to a year, which `report` is told.
    static func waitLimit(fromEnvironment value: String?, report: (String) -> Void) -> Duration {
        let standard = Duration.seconds(10)
        guard let value else { return standard }
        let words = value.split(whereSeparator: \.isWhitespace)
        guard words.count == 1, let seconds = Double(words[0]), seconds >= 1e-9, seconds <= 31_536_000 else {
            report(
                "TaskDispatch: \(waitLimitVariable) is \"\(value)\", not a number of seconds from a nanosecond to a year (such as 60); ManualDispatcher's default wait limit stays 10 s\n"
            )
            return standard
        }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    /// The most tasks one drain may run beyond those pending when it starts, and the most clock jumps
    /// ``Mode/autoAdvance`` makes between two calls of the test: a task that keeps rescheduling itself past it stops
    /// with ``ManualDispatcherError/Kind/runawayTasks(limit:)`` (see <doc:Limits>).
    public let runawayLimit: Int

    /// Creates a dispatcher that holds every task until the test runs it.
    ///
    /// - Parameters:
    ///   - mode: Who runs the tasks: the test (``Mode/manual``, the default), or the dispatcher as they are
    ///     dispatched (``Mode/autoDrain``, ``Mode/autoAdvance``).
    ///   - order: How to choose among due tasks; ``Order/dispatch`` by default.
    ///   - waitLimit: The longest real time an async call waits for the code under test; ``defaultWaitLimit``, 10
    ///     seconds unless the environment sets it, by default (see ``waitLimit``).
    ///   - runawayLimit: The most tasks a drain runs beyond those pending when it starts; 100,000 by default (see
    ///     ``runawayLimit``). Values below 1 count as 1.
    ///   - historyLimit: How many runs ``history`` keeps, most recent last (about 100 bytes each); 0 (or a negative
    ///     value) keeps none.
    ///   - fileID: The creating file, reported by ``ManualDispatcherRegistry``; leave the default.
    ///   - line: The creating line, reported by ``ManualDispatcherRegistry``; leave the default.
    public init(
        mode: Mode = .manual,
        order: Order = .dispatch,
        waitLimit: Duration = ManualDispatcher.defaultWaitLimit,
        runawayLimit: Int = 100_000,
        historyLimit: Int = 1_000,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) {
        self.waitLimit = waitLimit
        self.runawayLimit = Swift.max(1, runawayLimit)
        let schedule = Schedule(order: order, mode: mode, runawayLimit: runawayLimit, historyLimit: historyLimit)
        self.storage = Storage(schedule, waitLimit: waitLimit)
        let createdAt = CallSite(fileID: fileID, line: line)
        self.registration = ManualDispatcherRegistry.current.map { .init(createdAt: createdAt, registry: $0) }
        self.registration?.attach(self)
        // A clock hold lasts at most the wait limit (`ClockHold`); its timer does nothing once the dispatcher is gone.
        let setTimer: @Sendable (UInt64) -> Void = { [weak self] generation in
            DispatchQueue.global().asyncAfter(deadline: waitLimit.dispatchDeadline) { [weak self] in
                self?.storage.clockHoldTimerFired(for: generation, dispatcherCreatedAt: createdAt)
            }
        }
        self.storage.update { [registration = self.registration?.id] in
            $0.registration = registration
            // A zero wait limit holds nothing: a hold would end at once.
            if waitLimit > .zero { $0.clockHold.setTimer = setTimer } else { $0.clockHold.isReleased = true }
        }
    }

    deinit {
        // The tracked task this release happens on, if it is one of this dispatcher's: it is finishing.
        let releasing = self.storage.trackedCaller?.id
        let left = self.storage.update { $0.leftovers(releasing: releasing, limit: self.waitLimit) }
        var report = ""
        // What one error can have listed in full, when nothing else is left.
        var listed = left.uncounted.isEmpty && left.errors == nil ? ManualDispatcherRegistry.Leftover() : nil
        if case .awaitsCancelled(_, let whats, _)? = left.awaits?.misuse { listed?.cancelledAwaits = whats }
        if let snapshot = left.snapshot {
            let pending = snapshot.pending.map { PendingTask($0, callSites: snapshot.callSites) }
            let seed = snapshot.seed.map { " (random order seed \($0))" } ?? ""
            let listing = pending.map { "  \($0)\n" }.joined()
            let hidden = snapshot.pendingCount - snapshot.pending.count
            let more = hidden > 0 ? "  … and \(hidden) more\n" : ""
            report +=
                "ManualDispatcher\(seed) was deinitialized with \(count(snapshot.pendingCount, "pending task"))\(ManualDispatcherError.seriesNote(snapshot)); \(snapshot.pendingCount == 1 ? "it never ran" : "they never ran"). \(ManualDispatcherError.seriesAdvice(snapshot).map { "\($0); check" } ?? "Run \(snapshot.pendingCount == 1 ? "it" : "them") with runUntilIdle() or check") with verifyIdle() at the end of the test:\n\(listing)\(more)"
            let runs = snapshot.recentRuns.suffix(10).map { "  \(TaskRun($0, callSites: snapshot.callSites))\n" }
            if !runs.isEmpty { report += "Last \(runs.count) runs, oldest first:\n\(runs.joined())" }
            listed?.pending = pending
            listed?.pendingCount = snapshot.pendingCount
        }
        for failure in left.uncounted + [left.errors, left.awaits].compactMap({ $0 }) {
            report += "ManualDispatcher was deinitialized: \(ManualDispatcherError(failure).summary)\n"
        }
        // A registry's check looks at running tasks later, through the storage they keep alive, and reports an error
        // since; with no check to come, the report names them now.
        let reported = self.registration?.dispatcherReleased(
            ManualDispatcherRegistry.Release(
                report: report.isEmpty ? nil : report, listed: listed,
                trackedTasks: left.running != nil ? self.storage : nil))
        if let running = left.running, reported == nil {
            report +=
                "ManualDispatcher was deinitialized while tracked tasks were still running, so nothing will check how they end (an error they throw is lost): \(ManualDispatcherError(running).summary)\n"
        }
        if !report.isEmpty, reported != true { writeToStandardError(report) }
        // Their scopes forget them; their closures go with `left`, after the report.
        for (task, _) in left.cancelled { task.cancelled() }
    }

    // MARK: - Dispatching

    /// Records `task` to run when the test says so; in auto-drain mode, runs it at once.
    ///
    /// - Parameter task: The task to hold.
    /// - Returns: A handle that can cancel the task until it runs.
    /// - Complexity: O(1) amortized for an immediate task, O(log n) for a delayed one.
    @discardableResult
    public func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.storage.dispatch(task)
    }

    package var scopeCarrier: any ScopeCarrier {
        self.storage
    }

    // MARK: - Observing

    /// The virtual time: zero at creation, moved only by the `advance` methods, auto-advance and the drains that jump
    /// to the next delayed task; it stops at about 292 years (<doc:TestingWithVirtualTime>).
    public var now: Duration {
        .nanoseconds(self.storage.read { $0.now })
    }

    /// The number of tasks that have not run and were not cancelled, due or delayed, in both contexts.
    public var pendingTaskCount: Int {
        self.storage.read { $0.pendingCount }
    }

    /// The number of pending tasks in one context, due or delayed.
    ///
    /// - Parameter context: The context to count.
    /// - Returns: The number of tasks of that context that have not run and were not cancelled.
    public func pendingTaskCount(in context: TaskContext) -> Int {
        self.storage.read { $0.pendingCount(in: context) }
    }

    /// The pending tasks, in the order dispatch order would run them: by due time, then by sequence.
    ///
    /// - Complexity: O(n log n) in the number of pending tasks.
    public var pendingTasks: [PendingTask] {
        let (tasks, callSites) = self.storage.read { ($0.allPendingTasks, $0.callSites.sites) }
        return tasks.map { PendingTask($0, callSites: callSites) }
    }

    /// The most recent runs, oldest first, at most the `historyLimit` given at creation.
    ///
    /// - Complexity: O(h), h the runs kept: each read copies them, as each thrown error does for its
    ///   ``ManualDispatcherError/recentRuns``.
    public var history: [TaskRun] {
        let (runs, callSites) = self.storage.read { (Array($0.history), $0.callSites.sites) }
        return runs.map { TaskRun($0, callSites: callSites) }
    }

    /// How the dispatcher chooses among due tasks. Setting it takes effect at the next step; setting a
    /// random order restarts its generator from the seed.
    ///
    /// - Complexity: Setting it is O(n log n) in the due background tasks, which move to the new order's queues.
    public var order: Order {
        get { self.storage.read { $0.order } }
        set { self.storage.update { $0.setOrder(newValue) } }
    }

    /// Who runs the tasks: the test, or the dispatcher as they are dispatched (see ``Mode``).
    ///
    /// Changing it takes effect at once: switching to ``Mode/autoDrain`` or ``Mode/autoAdvance`` runs the tasks
    /// already due (and, in auto-advance, moves the clock when everything has settled).
    public var mode: Mode {
        get { self.storage.read { $0.mode } }
        set { self.storage.send(.mode(newValue, byTest: self.storage.trackedCaller == nil)) }
    }

    // MARK: - Verifying

    /// Throws unless every task has run or was cancelled, and every tracked task has finished.
    ///
    /// Call it at the end of a test to prove the code under test left no work behind. A task another thread is running
    /// gets ``waitLimit`` to end; called from inside a task the dispatcher runs, it reports that task at once.
    ///
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/pendingTasks`` (with the pending or
    ///   running tasks), ``ManualDispatcherError/Kind/unfinishedTasks`` (tracked tasks not finished, with what each
    ///   last awaited), ``ManualDispatcherError/Kind/unobservedTaskError`` (errors nobody claimed), or an earlier
    ///   auto-drain's runaway error.
    public func verifyIdle() throws(ManualDispatcherError) {
        if let failure = self.idleCheck() { throw ManualDispatcherError(failure) }
    }

    /// ``verifyIdle()``'s failure, if any (the registry reads what it reports).
    func idleCheck() -> Failure? {
        self.storage.idleFailure(thread: currentThreadIdentity(), onMainActor: MainActorExecution.isOnMainActor)
    }
}
