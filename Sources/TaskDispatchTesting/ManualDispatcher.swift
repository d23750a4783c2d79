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
/// When order does not matter, ``runUntilIdle(maxTasks:)`` drains everything, or auto-drain mode
/// (``isAutoDrainEnabled``) runs each task the moment it is dispatched.
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
/// context, a task that keeps rescheduling itself past `maxTasks`, moving the clock backwards, or calling a
/// run method from inside a task. The error lists the pending tasks with their call sites, the last runs,
/// and the random seed.
///
/// ## Thread safety
///
/// Any thread may dispatch at any time. One run method runs at a time: a call from inside a running task
/// throws ``ManualDispatcherError/Kind/reentrantRun``; a call from another thread while a run is in
/// progress waits for it to end, except on the main actor, where waiting could deadlock (the other run may
/// need the main actor for a foreground task), so it throws ``ManualDispatcherError/Kind/concurrentRun``.
///
/// Deinitializing a dispatcher that still holds tasks never crashes: it writes the pending tasks to
/// standard error. A pending task whose closure captures an object that holds the dispatcher keeps the
/// dispatcher alive, so end each test with ``verifyIdle()``.
public final class ManualDispatcher: TaskDispatcher {
    let _state: LockedValue<_State>

    /// The default bound on the number of tasks one call to a draining method may run.
    public static let defaultMaxTasks = 100_000

    /// Creates a dispatcher that holds every task until the test runs it.
    ///
    /// - Parameters:
    ///   - order: How to choose among due tasks; ``Order/dispatch`` by default.
    ///   - autoDrain: Whether each dispatch runs the task at once (see ``isAutoDrainEnabled``).
    ///   - historyLimit: How many runs ``history`` keeps, most recent last; 0 (or a negative value) keeps none.
    public init(order: Order = .dispatch, autoDrain: Bool = false, historyLimit: Int = 1_000) {
        self._state = LockedValue(_State(order: order, autoDrain: autoDrain, historyLimit: Swift.max(0, historyLimit)))
    }

    deinit {
        let report = self._state.withLock { state -> String? in
            guard state.pendingCount > 0 else { return nil }
            let tasks = state.pendingTasks
            let seed = state.order.seed.map { " (random order seed \($0))" } ?? ""
            return "ManualDispatcher\(seed) was deinitialized with \(_count(tasks.count, "pending task")); they never "
                + "ran. Run them with runUntilIdle() or check with verifyIdle() at the end of the test:\n"
                + tasks.prefix(50).map { "  \($0)\n" }.joined()
        }
        if let report {
            _writeToStandardError(report)
        }
    }

    // MARK: - Dispatching

    /// Records `task` to run when the test says so; in auto-drain mode, runs it at once.
    ///
    /// - Parameter task: The task to hold.
    /// - Returns: A handle that can cancel the task until it runs.
    /// - Complexity: O(1) amortized for an immediate task, O(log n) for a delayed one.
    @discardableResult
    public func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let (sequence, drain, woken) = self._state.withLock { state -> (UInt64, Bool, [WaitResumer]?) in
            let sequence = state.accept(task)
            let woken = state.waiters.isEmpty ? nil : state.waitersToWake()  // async waits: ManualDispatcher+Waiting
            guard state.autoDrain, state.activeRun == nil, state.hasDueTask else { return (sequence, false, woken) }
            state.activeRun = _ActiveRun(method: "auto-drain", thread: _currentThreadID())
            return (sequence, true, woken)
        }
        if let woken { WaitResumer.resumeAll(woken) }
        if drain {
            self._drainAutomatically()
        }
        return TaskHandle(id: sequence, canceller: _ManualCanceller(state: self._state))
    }

    // MARK: - Observing

    /// The virtual time: zero when the dispatcher was created, moved only by ``advance(by:maxTasks:)``,
    /// ``advance(to:maxTasks:)`` and the draining methods that jump to the next delayed task.
    public var now: Duration {
        .nanoseconds(self._state.withLock { $0.now })
    }

    /// The number of tasks that have not run and were not cancelled, due or delayed, in both contexts.
    public var pendingCount: Int {
        self._state.withLock { $0.pendingCount }
    }

    /// The number of pending tasks in one context, due or delayed.
    ///
    /// - Parameter context: The context to count.
    /// - Returns: The number of tasks of that context that have not run and were not cancelled.
    public func pendingCount(in context: TaskContext) -> Int {
        self._state.withLock { state in
            switch context {
            case .foreground: state.dueForeground + state.delayedForeground
            case .background: state.dueBackground + state.delayedBackground
            }
        }
    }

    /// The pending tasks, in the order dispatch order would run them: by due time, then by sequence.
    ///
    /// - Complexity: O(n log n) in the number of pending tasks.
    public var pendingTasks: [PendingTask] {
        self._state.withLock { $0.pendingTasks }
    }

    /// The most recent runs, oldest first, at most the `historyLimit` given at creation.
    public var history: [TaskRun] {
        self._state.withLock { $0.historyArray }
    }

    /// How the dispatcher chooses among due tasks. Setting it takes effect at the next step; setting a
    /// random order restarts its generator from the seed.
    public var order: Order {
        get { self._state.withLock { $0.order } }
        set {
            self._state.withLock { state in
                state.order = newValue
                state.random = _SplitMix64(seed: newValue.seed ?? 0)
            }
        }
    }

    /// Whether each dispatch runs its task at once, on the dispatching thread.
    ///
    /// Auto-drain is for tests where order does not matter. When it is on:
    /// - A dispatch runs the task before returning. Tasks that the running task dispatches run after it,
    ///   in order, never nested inside it.
    /// - A foreground task runs on the main actor: inline when the dispatching code is on the main actor,
    ///   otherwise through `DispatchQueue.main.sync`, so the dispatching thread waits until it has run.
    /// - A dispatch made while another thread (or a run method) is running tasks only enqueues; that run
    ///   picks the task up before it ends.
    /// - Delayed tasks still wait for the clock: ``advance(by:maxTasks:)`` runs them.
    /// - Turning it on runs the tasks already due.
    /// - A dispatch that runs its task at once returns the handle of a task that has already run, so cancelling
    ///   it returns `false`: code that stores handles to cancel later must not expect them to be live.
    /// - A drain that passes ``defaultMaxTasks`` stops, writes the runaway tasks to standard error, and the
    ///   next run method or ``verifyIdle()`` throws ``ManualDispatcherError/Kind/runawayTasks(maxTasks:)``.
    public var isAutoDrainEnabled: Bool {
        get { self._state.withLock { $0.autoDrain } }
        set {
            let thread = _currentThreadID()
            let drain = self._state.withLock { state -> Bool in
                state.autoDrain = newValue
                guard newValue, state.activeRun == nil, state.hasDueTask else { return false }
                state.activeRun = _ActiveRun(method: "auto-drain", thread: thread)
                return true
            }
            if drain {
                self._drainAutomatically()
            }
        }
    }

    // MARK: - Verifying

    /// Throws unless every task has run or was cancelled.
    ///
    /// Call it at the end of a test to prove the code under test left no work behind.
    ///
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/pendingTasks`` listing every
    ///   pending task with its label and call site; or the runaway error of an earlier auto-drain.
    public func verifyIdle() throws(ManualDispatcherError) {
        let failure = self._state.withLock { state -> ManualDispatcherError? in
            if let error = state.deferredError {
                state.deferredError = nil
                return error
            }
            guard state.pendingCount > 0 else { return nil }
            return state.makeError(
                .pendingTasks,
                "expected no pending tasks, but \(_count(state.pendingCount, "task")) never ran. Run them "
                    + "(runUntilIdle()), cancel them, or fix the code that dispatched them"
            )
        }
        if let failure { throw failure }
    }
}

/// The canceller behind a ``ManualDispatcher``'s handles: the dispatcher's state and a sequence number.
///
/// A struct around the state's reference fits in the handle's inline existential buffer, so handing out a
/// handle allocates nothing.
struct _ManualCanceller: TaskCancelling {
    let state: LockedValue<_State>

    func cancelTask(id: UInt64) -> Bool {
        self.state.withLock { $0.cancel(id) }
    }

    func isTaskCancelled(id: UInt64) -> Bool {
        self.state.withLock { $0.cancelled.contains(id) }
    }
}

extension ManualDispatcher {
    // MARK: - Internal machinery shared by the run methods

    /// Claims the right to run tasks for `method`, or throws if the call is re-entrant.
    func _beginRun(_ method: String) throws(ManualDispatcherError) {
        let thread = _currentThreadID()
        while true {
            let outcome = self._state.withLock { state -> Result<Bool, ManualDispatcherError> in
                guard let active = state.activeRun else {
                    if let error = state.deferredError {
                        state.deferredError = nil
                        return .failure(error)
                    }
                    state.activeRun = _ActiveRun(method: method, thread: thread)
                    return .success(true)
                }
                let onMainActor = _MainActorExecution.isOnMainActor
                let fromRunningTask = active.thread == thread || (active.executing == .foreground && onMainActor)
                if !fromRunningTask && onMainActor {
                    // Waiting here could deadlock: the other run needs the main actor for its foreground tasks.
                    return .failure(
                        state.makeError(
                            .concurrentRun,
                            "\(method) was called on the main actor while another thread is running tasks with "
                                + "\(active.method); waiting would deadlock, because that run needs the main actor "
                                + "for foreground tasks. Run tasks from one place at a time"
                        )
                    )
                }
                guard fromRunningTask else { return .success(false) }
                let culprit =
                    active.executing == nil ? "" : state.historyArray.last.map { " (inside task \($0))" } ?? ""
                return .failure(
                    state.makeError(
                        .reentrantRun,
                        "\(method) was called while \(active.method) is running tasks\(culprit). A task must not "
                            + "run other tasks: dispatch the work instead, and let the test run it"
                    )
                )
            }
            switch outcome {
            case .success(true): return
            case .success(false): _yieldThread()  // another thread's run is in progress; wait for its end
            case .failure(let error): throw error
            }
        }
    }

    /// Releases the run, first draining due tasks if auto-drain is on.
    func _endRun() {
        let drain = self._state.withLock { state -> Bool in
            if state.autoDrain && state.hasDueTask {
                state.activeRun?.method = "auto-drain"
                return true
            }
            state.activeRun = nil
            return false
        }
        if drain {
            self._drainAutomatically()
        }
    }

    /// Runs one entry outside the lock: background work inline, foreground work on the main actor.
    @inline(__always)
    func _execute(_ entry: _Entry) {
        switch entry.work {
        case .background(let work): work()
        case .foreground(let work): _MainActorExecution.runAndWait(work)
        }
    }

    /// Pops the next entry under the lock and marks it executing; clears the previous one in the same section.
    @inline(__always)
    func _popNext(_ scope: _Scope, sequenceLimit: UInt64 = .max, jumpClockUntil limit: Int64? = nil) -> _Entry? {
        self._state.withLock { state in
            var entry = state.popNext(scope, sequenceLimit: sequenceLimit)
            if entry == nil, let limit, state.jumpToNextDelayed(notAfter: limit) {
                entry = state.popNext(scope, sequenceLimit: sequenceLimit)
            }
            state.activeRun?.executing = entry?.context
            return entry
        }
    }

    /// Whether a drain would run another task, jumping the clock no further than `limit`; used to tell a
    /// finished drain from a runaway one.
    func _hasMoreWork(jumpClockUntil limit: Int64) -> Bool {
        self._state.withLock { state in
            state.activeRun?.executing = nil
            if state.hasDueTask { return true }
            guard let next = state.nextDelayedDueTime() else { return false }
            return next <= limit
        }
    }

    /// The auto-drain loop: runs due tasks until none is left, then releases the run in the same critical section.
    func _drainAutomatically() {
        var ran = 0
        while true {
            let entry = self._state.withLock { state -> _Entry? in
                state.activeRun?.executing = nil
                guard ran < Self.defaultMaxTasks else {
                    let error = state.makeError(
                        .runawayTasks(maxTasks: Self.defaultMaxTasks),
                        "auto-drain ran \(ran) tasks in one go and tasks kept falling due; "
                            + Self._describeRunaway(state.historyArray, ran: ran)
                    )
                    state.deferredError = error
                    state.activeRun = nil
                    _writeToStandardError("\(error)\n")
                    return nil
                }
                guard let entry = state.popNext(.any) else {
                    state.activeRun = nil
                    return nil
                }
                state.activeRun?.executing = entry.context
                return entry
            }
            guard let entry else { return }
            self._execute(entry)
            ran += 1
        }
    }

    /// Names the tasks that ran most often among the last `ran` runs: the ones that keep coming back.
    static func _describeRunaway(_ history: [TaskRun], ran: Int) -> String {
        let recent = history.suffix(ran)
        guard !recent.isEmpty else {
            return "raise maxTasks if that many tasks are expected, or stop the task that reschedules itself"
        }
        var counts: [String: Int] = [:]
        var order: [String] = []
        for run in recent {
            let key = (run.label.map { "\"\($0)\"" } ?? "(no label)") + " from \(run.callSite)"
            if counts[key] == nil { order.append(key) }
            counts[key, default: 0] += 1
        }
        let top = order.sorted { counts[$0, default: 0] > counts[$1, default: 0] }.prefix(3)
        let names = top.map { "\($0) (\(counts[$0, default: 0]) of the last \(recent.count) runs)" }
        return "the tasks that keep coming back are " + names.joined(separator: ", ")
            + ". Stop the task that reschedules itself, or raise maxTasks if that many tasks are expected"
    }
}
