import Dispatch
public import TaskDispatch

/// A dispatcher for tests: it holds every task until the test runs it, one step at a time or all at once,
/// on a virtual clock that moves only when the test says so.
///
/// Give it to the code under test instead of `QueueDispatcher`. Nothing runs behind the
/// test's back, so the test can check the state between the background step and the foreground step:
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
/// When order does not matter, ``runUntilIdle()`` drains everything, or ``Mode/autoDrain`` runs each task the moment it
/// is dispatched; ``Mode/autoAdvance`` also moves the clock, for tests that check only the end state. In async code,
/// the same names are async (``runUntilIdle(waitingUpTo:)``): they also wait for tasks started with
/// ``startTask(label:callSite:operation:)`` to settle.
///
/// ## Where tasks run
///
/// Tasks run on the thread that calls a run method, synchronously, before the method returns. Foreground
/// tasks always run on the main actor: inline when the caller is on the main actor (an `@MainActor` test,
/// or any XCTest test method), otherwise through `DispatchQueue.main.sync`, which blocks the caller until
/// the task has run. Mark tests that touch main-actor state `@MainActor`.
///
/// ## Order
///
/// Due tasks run by (due time, dispatch order). ``order`` can instead run background tasks by priority,
/// or pick among the due tasks with a seeded random generator to expose hidden order dependence.
/// Foreground tasks always keep their order among themselves, as on the serial main queue.
///
/// ## Misuse
///
/// Every run method throws ``ManualDispatcherError`` instead of hanging or crashing: stepping an empty
/// context, a task that keeps rescheduling itself past ``runawayLimit``, moving the clock backwards, or calling a
/// run method from inside a task. The error lists the pending tasks with their call sites, the last runs,
/// and the random seed.
///
/// ## Thread safety
///
/// Any thread may dispatch at any time. One run method runs at a time: a call from inside a running task
/// throws ``ManualDispatcherError/Kind/reentrantRun``; a call from another thread while a run is in
/// progress waits for it to end. An async run method suspends until then, on any actor, within the real-time
/// limit. A synchronous one blocks its thread, except on the main actor, where blocking could deadlock (the other
/// run may need the main actor for a foreground task), so it throws ``ManualDispatcherError/Kind/concurrentRun``.
///
/// Deinitializing a dispatcher that still holds tasks never crashes: it writes the pending tasks to
/// standard error (under the `verifiesIdleDispatchers` trait, it reports them to the trait instead). But a pending task whose closure holds the dispatcher keeps it alive, and then no release
/// comes and nothing is written: that is the usual shape of a service (a background step that dispatches its
/// delivery through the dispatcher it captured), and so is a closure that holds an object that holds the
/// dispatcher. So do not count on the release: end each test with ``verifyIdle()``, or put the
/// `verifiesIdleDispatchers` trait from `TaskDispatchTestingTraits` on the suite.
public final class ManualDispatcher: TaskDispatcher {
    /// The schedule, behind the lock every operation takes once.
    let monitor: Monitor<Schedule>

    /// This dispatcher's entry in the ``ManualDispatcherRegistry`` that was tracking when it was created, if any.
    let registration: ManualDispatcherRegistry.Registration?

    /// The ``Executor``, once asked for (`ManualDispatcher.Executor.swift`); typed loosely because the type needs
    /// macOS 15 / iOS 18 and a stored property cannot be marked available.
    let executorStorage = LockedValue<(any Sendable & AnyObject)?>(nil)

    /// The runaway limit a dispatcher has unless its initializer says otherwise.
    static let defaultRunawayLimit = 100_000

    /// The longest real time an async step, drain or ``value(of:)-(Task<Success,Error>)`` waits for the code under test to do something
    /// before it throws; set when the dispatcher is created (see <doc:Limits>).
    ///
    /// Only a failing test ever spends it: a passing call is woken by the event it waits for.
    public let waitLimit: Duration

    /// The most tasks one drain may run beyond those pending when it starts, and the most clock jumps
    /// ``Mode/autoAdvance`` makes between two calls of the test; set when the dispatcher is created (see
    /// <doc:Limits>).
    ///
    /// A bulk of a million one-shot tasks drains; a task that keeps rescheduling itself is stopped with
    /// ``ManualDispatcherError/Kind/runawayTasks(limit:)``, naming the task that keeps coming back.
    public let runawayLimit: Int

    /// Creates a dispatcher that holds every task until the test runs it.
    ///
    /// - Parameters:
    ///   - mode: Who runs the tasks: the test (``Mode/manual``, the default), or the dispatcher as they are
    ///     dispatched (``Mode/autoDrain``, ``Mode/autoAdvance``).
    ///   - order: How to choose among due tasks; ``Order/dispatch`` by default.
    ///   - waitLimit: The longest real time an async call waits for the code under test; 10 seconds by default
    ///     (see ``waitLimit``).
    ///   - runawayLimit: The most tasks a drain runs beyond those pending when it starts; 100,000 by default (see
    ///     ``runawayLimit``). Values below 1 count as 1.
    ///   - historyLimit: How many runs ``history`` keeps, most recent last; 0 (or a negative value) keeps none.
    ///   - fileID: The creating file, reported by ``ManualDispatcherRegistry``; leave the default.
    ///   - line: The creating line, reported by ``ManualDispatcherRegistry``; leave the default.
    public init(
        mode: Mode = .manual,
        order: Order = .dispatch,
        waitLimit: Duration = .seconds(10),
        runawayLimit: Int = 100_000,
        historyLimit: Int = 1_000,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) {
        self.waitLimit = waitLimit
        self.runawayLimit = Swift.max(1, runawayLimit)
        self.monitor = Monitor(
            Schedule(order: order, mode: mode, runawayLimit: runawayLimit, historyLimit: historyLimit)
        )
        self.registration = ManualDispatcherRegistry.current?.register(createdAt: CallSite(fileID: fileID, line: line))
        self.registration?.attach(self)
        // A hold of the clock in auto-advance lasts at most the wait limit (`ClockHold`). The timer holds the
        // dispatcher weakly: once it is gone (its monitor may live on in a handle or a task), the timer does nothing.
        let createdAt = CallSite(fileID: fileID, line: line)
        self.monitor.withLock { [weak self] schedule in
            guard waitLimit > .zero else { return schedule.clockHold.releaseHolds() }
            schedule.clockHold.setTimer = { [weak self] generation in
                DispatchQueue.global().asyncAfter(deadline: Self.deadline(after: waitLimit)) { [weak self] in
                    self?.monitor.clockHoldTimerFired(for: generation, limit: waitLimit, dispatcherCreatedAt: createdAt)
                }
            }
        }
    }

    deinit {
        let limit = self.waitLimit
        // The tracked task this release happens on, if it is one of this dispatcher's: it is finishing.
        let releasing = self.monitor.trackedCaller?.id
        let (snapshot, errors, awaits, running) = self.monitor.withLock {
            schedule -> (Snapshot?, Failure?, Failure?, Failure?) in
            // A tracked task does not keep its dispatcher alive, so one may still be running (with no pending task,
            // which the pending report would list with its start or its wait).
            let running = schedule.pendingCount > 0 ? [] : schedule.tracked.unfinished(excluding: releasing)
            return (
                schedule.pendingCount > 0 ? schedule.snapshot(recentRuns: 0) : nil,
                schedule.unobservedErrorsFailure(method: "The dispatcher's release"),
                schedule.cancelledAwaitsFailure(method: "The dispatcher's release", limit: limit),
                running.isEmpty ? nil : schedule.failure(.unfinishedTasks(tasks: running))
            )
        }
        // A registry checks the running tasks when its check comes, through the schedule they keep alive: by
        // then they have usually finished, and an error one threw after the release is reported.
        let checkedLater = running != nil && self.registration != nil
        guard snapshot != nil || errors != nil || awaits != nil || running != nil else {
            self.registration?.dispatcherReleased(pendingTasksReport: nil)
            return
        }
        var report = ""
        if let snapshot {
            let seed = snapshot.seed.map { " (random order seed \($0))" } ?? ""
            let listing = snapshot.pending.map { "  \(PendingTask($0, callSites: snapshot.callSites))\n" }.joined()
            let hidden = snapshot.pendingCount - snapshot.pending.count
            let more = hidden > 0 ? "  … and \(hidden) more\n" : ""
            report +=
                "ManualDispatcher\(seed) was deinitialized with \(count(snapshot.pendingCount, "pending task")); \(snapshot.pendingCount == 1 ? "it never ran. Run it" : "they never ran. Run them") with runUntilIdle() or check with verifyIdle() at the end of the test:\n\(listing)\(more)"
        }
        if let errors {
            report += "ManualDispatcher was deinitialized: \(ManualDispatcherError(errors).summary)\n"
        }
        if let awaits {
            report += "ManualDispatcher was deinitialized: \(ManualDispatcherError(awaits).summary)\n"
        }
        if let running, !checkedLater {
            report +=
                "ManualDispatcher was deinitialized while tracked tasks were still running, so nothing will check how they end (an error they throw is lost): \(ManualDispatcherError(running).summary)\n"
        }
        let onlyPendingTasks = snapshot.flatMap { snapshot in
            errors == nil && awaits == nil
                ? (snapshot.pending.map { PendingTask($0, callSites: snapshot.callSites) }, snapshot.pendingCount) : nil
        }
        self.registration?.dispatcherReleased(
            pendingTasksReport: report.isEmpty ? nil : report,
            onlyPendingTasks: onlyPendingTasks,
            trackedTasks: checkedLater ? self.monitor : nil
        )
        // A registry whose check records every failure (the idle trait) reports the release; the line on standard
        // error would say it twice.
        if !report.isEmpty, self.registration?.reportsReleases != true { writeToStandardError(report) }
    }

    // MARK: - Dispatching

    /// Records `task` to run when the test says so; in auto-drain mode, runs it at once.
    ///
    /// - Parameter task: The task to hold.
    /// - Returns: A handle that can cancel the task until it runs.
    /// - Complexity: O(1) amortized for an immediate task, O(log n) for a delayed one.
    @discardableResult
    public func dispatch(_ task: DispatchedTask) -> TaskHandle {
        // Two inlined calls of `record`, so that a plain dispatch, the hot path, carries nothing of the bound.
        guard let call = AwaitableCall.awaiting(task) else { return self.record(nil) { $0.accept(task) } }
        return self.record(nil, awaitedBy: call.awaiter, describedAs: call.description) { $0.accept(task) }
    }

    /// What a dispatch does after its critical section, on the run claim that section took, if any.
    enum AfterRecord {
        /// Nothing: no claim was taken.
        case nothing
        /// Drains as auto-drain does (``Schedule/claimForAutoDrain(thread:)``).
        case drain
        /// Runs the due tasks for the waiting async drain (``Schedule/claimForWaitingSettle(thread:)``).
        case runForWaitingSettle
    }

    /// Takes a task in with `accept`, in the one critical section of a dispatch that also records the wait of a
    /// tracked task of this dispatcher on it (`ManualDispatcher+Tasks.swift`), finds the async waits it wakes
    /// (`ManualDispatcher+Waiting.swift`) and claims an auto-drain; then resumes the waits, drains, and hands out
    /// the task's handle.
    ///
    /// The wait is `ownedWait` (the virtual clock's sleep passes its own), else the one an awaitable dispatch binds
    /// in `TaskTracking.dispatchingWait` around its `dispatch(_:)` call, through any decorator that forwards
    /// synchronously. That task-local is read only while this dispatcher has unfinished tracked tasks: a wait is
    /// recorded only for one of them (and not for an await cancelled already), and a plain dispatch then pays one
    /// count comparison under the lock it takes.
    /// A tracked task's start (`readingTheBoundWait: false`) is awaited by nobody and does not read it.
    ///
    /// `awaiter`, the awaitable dispatch or sleep that awaits the task (`what`), is bounded in real time unless that
    /// wait is one of this dispatcher's tracked tasks, which the async drains watch (see `bound(_:of:describedAs:)`).
    @inline(__always)
    func record(
        _ ownedWait: OwnedWait?,
        readingTheBoundWait: Bool = true,
        awaitedBy awaiter: (any TaskAwaiter)? = nil,
        describedAs what: @autoclosure () -> String = "",
        _ accept: (inout Schedule) -> ScheduledTask
    ) -> TaskHandle {
        let (scheduled, then, woken, byTrackedTask) = self.monitor.withLock {
            schedule -> (ScheduledTask, AfterRecord, [WaitResumer]?, Bool) in
            let scheduled = accept(&schedule)
            // The awaiting code can cancel the task from here on: a drain may see it waiting, and run the task,
            // before the dispatch returns to it. An await whose task was cancelled first ends once the dispatch
            // returns: that task runs on, so its wait is not recorded.
            let awaitGoesOn =
                awaiter?.accepted(TaskHandle(canceller: ManualCanceller(monitor: self.monitor, task: scheduled)))
                ?? true
            var byTrackedTask = false
            if schedule.tracked.unfinishedCount > 0,
                let wait = ownedWait
                    ?? (readingTheBoundWait ? TaskTracking.dispatchingWait.flatMap({ $0 as? OwnedWait }) : nil)
            {
                byTrackedTask = wait.scope.monitor === self.monitor
                if awaitGoesOn { wait.recordBegin(in: &schedule, of: self.monitor) }
            }
            // An awaited dispatch from a tracked task on the main actor may run for a waiting async drain (see
            // `runForWaitingSettle()`); the main-actor check only once a drain waits.
            if awaiter != nil, awaitGoesOn, byTrackedTask, !schedule.waitingSettles.isEmpty,
                MainActorExecution.isOnMainActor,
                schedule.claimForWaitingSettle(thread: currentThreadIdentity())
            {
                // The waiters are woken after the runs, if they still need to be.
                return (scheduled, .runForWaitingSettle, nil, true)
            }
            let woken = schedule.wokenWaiters()
            // In auto-advance, a dispatch from outside the tracked tasks (the test's, or its own sleep) lets the clock
            // reach its task; a tracked task's, only while the test waits (see `ClockHold`).
            if schedule.mode == .autoAdvance, scheduled.key.due > schedule.now, !byTrackedTask,
                self.monitor.callerIsUntracked
            {
                schedule.clockHold.allowJumps(to: scheduled)
            }
            let drain = schedule.autoDrain && schedule.claimForAutoDrain(thread: currentThreadIdentity())
            return (scheduled, drain ? .drain : .nothing, woken, byTrackedTask)
        }
        if let woken { WaitResumer.resumeAll(woken) }
        switch then {
        case .nothing: break
        case .drain: self.drainAutomatically()
        case .runForWaitingSettle: self.runForWaitingSettle()
        }
        if let awaiter, !byTrackedTask {
            self.bound(awaiter, of: scheduled, describedAs: what())
        }
        return TaskHandle(canceller: ManualCanceller(monitor: self.monitor, task: scheduled))
    }

    // MARK: - Observing

    /// The virtual time: zero when the dispatcher was created, moved only by ``advance(by:)``,
    /// ``advance(to:)``, their async forms, auto-advance and the draining methods that jump to the next delayed task.
    ///
    /// The clock counts nanoseconds in 64 bits, so it stops at `Duration.nanoseconds(Int64.max - 1)`, about
    /// 292 years: moving it further leaves it there. A task whose delay reaches past that never falls due: it
    /// stays pending, so ``verifyIdle()`` reports it, and no amount of advancing runs it early.
    public var now: Duration {
        .nanoseconds(self.monitor.withLock { $0.now })
    }

    /// The number of tasks that have not run and were not cancelled, due or delayed, in both contexts.
    public var pendingTaskCount: Int {
        self.monitor.withLock { $0.pendingCount }
    }

    /// The number of pending tasks in one context, due or delayed.
    ///
    /// - Parameter context: The context to count.
    /// - Returns: The number of tasks of that context that have not run and were not cancelled.
    public func pendingTaskCount(in context: TaskContext) -> Int {
        self.monitor.withLock { $0.pendingCount(in: context) }
    }

    /// The pending tasks, in the order dispatch order would run them: by due time, then by sequence.
    ///
    /// - Complexity: O(n log n) in the number of pending tasks.
    public var pendingTasks: [PendingTask] {
        let (tasks, callSites) = self.monitor.withLock { ($0.allPendingTasks, $0.callSites.sites) }
        return tasks.map { PendingTask($0, callSites: callSites) }
    }

    /// The most recent runs, oldest first, at most the `historyLimit` given at creation.
    public var history: [TaskRun] {
        let (runs, callSites) = self.monitor.withLock { (Array($0.history), $0.callSites.sites) }
        return runs.map { TaskRun($0, callSites: callSites) }
    }

    /// How the dispatcher chooses among due tasks. Setting it takes effect at the next step; setting a
    /// random order restarts its generator from the seed.
    ///
    /// - Complexity: Setting it is O(n log n) in the due background tasks, which move to the new order's queues.
    public var order: Order {
        get { self.monitor.withLock { $0.order } }
        set { self.monitor.withLock { $0.setOrder(newValue) } }
    }

    /// Who runs the tasks: the test, or the dispatcher as they are dispatched (see ``Mode``).
    ///
    /// Changing it takes effect at once: switching to ``Mode/autoDrain`` or ``Mode/autoAdvance`` runs the tasks
    /// already due (and, in auto-advance, moves the clock when everything has settled).
    public var mode: Mode {
        get { self.monitor.withLock { $0.mode } }
        set {
            let thread = currentThreadIdentity()
            let drain = self.monitor.withLock { schedule in
                schedule.mode = newValue
                // The test's switch lets the clock reach every task pending now, once everything has settled.
                if newValue == .autoAdvance, self.monitor.callerIsUntracked {
                    for task in schedule.waitingTasks { schedule.clockHold.allowJumps(to: task) }
                }
                return schedule.claimForAutoDrain(thread: thread)
            }
            if drain {
                self.drainAutomatically()
            }
        }
    }

    // MARK: - Verifying

    /// Throws unless every task has run or was cancelled, and every tracked task has finished.
    ///
    /// Call it at the end of a test to prove the code under test left no work behind. A task that another thread
    /// is running (an auto-drain on a background thread, say) may be at its last statement, the one that woke the
    /// test: the check first waits for that task to end, within ``waitLimit`` of real time, and reports it if it has
    /// not ended by then (or reports the next task that run began meanwhile). Called from inside a task the
    /// dispatcher is running, it reports that task at once.
    ///
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/pendingTasks`` listing the
    ///   pending tasks with their labels and call sites, or naming a task still running; of kind ``ManualDispatcherError/Kind/unfinishedTasks``
    ///   naming each task started with ``startTask(label:callSite:operation:)`` that has not finished, with what it
    ///   last awaited; of kind ``ManualDispatcherError/Kind/unobservedTaskError`` for errors thrown by tracked tasks
    ///   that the test did not claim; or the runaway error of an earlier auto-drain.
    public func verifyIdle() throws(ManualDispatcherError) {
        let thread = currentThreadIdentity()
        let onMainActor = MainActorExecution.isOnMainActor
        // The task another thread was running when the check first looked, and when the wait for its end ends.
        var awaited: (sequence: UInt64, deadline: DispatchTime)?
        while true {
            let wait = self.monitor.withLock { schedule -> DispatchSemaphore? in
                guard let claim = schedule.claim, let context = claim.executing,
                    Self.caller(executing: context, in: claim, thread: thread, onMainActor: onMainActor) == nil
                else { return nil }
                if let awaited, awaited.sequence != claim.executingSequence || DispatchTime.now() >= awaited.deadline {
                    return nil
                }
                let check = DispatchSemaphore(value: 0)
                schedule.idleChecks.append(check)
                schedule.idleCheckObserver?()
                if awaited == nil { awaited = (claim.executingSequence, Self.deadline(after: self.waitLimit)) }
                return check
            }
            guard let wait, let deadline = awaited?.deadline else { break }
            _ = wait.wait(timeout: deadline)
        }
        let failure = self.monitor.withLock { schedule -> Failure? in
            schedule.autoAdvanceJumps = 0
            if let failure = schedule.takeDeferredFailure() {
                return failure
            }
            if let failure = schedule.unobservedErrorsFailure(method: "verifyIdle()") {
                return failure
            }
            if let failure = schedule.cancelledAwaitsFailure(method: "verifyIdle()", limit: self.waitLimit) {
                return failure
            }
            let unfinished = schedule.tracked.unfinished
            if schedule.pendingCount > 0 {
                return schedule.failure(.pendingTasks(unfinished: unfinished))
            }
            if let claim = schedule.claim, let task = schedule.executingTask {
                let caller =
                    Self.caller(executing: task.context, in: claim, thread: thread, onMainActor: onMainActor)
                    ?? .elsewhere(waited: self.waitLimit)
                return schedule.failure(.taskStillRunning(task: task, runner: claim.method, caller: caller))
            }
            return unfinished.isEmpty ? nil : schedule.failure(.unfinishedTasks(tasks: unfinished))
        }
        if let failure { throw ManualDispatcherError(failure) }
    }

    /// Where a `verifyIdle()` caller on `thread` stands to the task of `context` that the run `claim` is executing:
    /// inside it (on the claim's thread), or on the main actor it needs (a foreground task runs there, or waits for
    /// it, when the run is on another thread); `nil` elsewhere, where it can wait for the task to end.
    private static func caller(
        executing context: TaskContext,
        in claim: RunClaim,
        thread: UInt,
        onMainActor: Bool
    ) -> IdleCheckCaller? {
        if claim.thread == thread { return .insideTheTask }
        if onMainActor && context == .foreground { return .onTheMainActorItNeeds }
        return nil
    }
}

/// The canceller behind a ``ManualDispatcher``'s handles: the dispatcher's lock and the task.
///
/// Two references fit in the handle's inline existential buffer, so handing out a handle allocates nothing.
struct ManualCanceller: TaskCancelling {
    let monitor: Monitor<Schedule>
    let task: ScheduledTask

    func cancelTask() -> Bool {
        let released: DispatchedTask.Work? = self.monitor.withLock { $0.cancel(self.task) }
        return released != nil  // the closure, and what it captured, go here: outside the lock
    }

    var isTaskCancelled: Bool {
        self.monitor.withLock { _ in self.task.state == .cancelled }
    }
}
