import Dispatch
import TaskDispatch

extension ManualDispatcher {
    /// Starts a tracked Swift task: its start waits as a pending task until the test runs it, and an error it
    /// throws that nobody awaited is reported.
    ///
    /// The start is a pending task labeled `label` at the call site: foreground when the operation is isolated to the
    /// main actor, background otherwise. Once it has run, the operation runs where `Task { }` would, concurrently with
    /// the test, and the async drains know from the dispatcher's records when it waits on the dispatcher again. A task
    /// cancelled before its operation begins throws `CancellationError` without running it. An error the operation
    /// throws is reported once, by ``verifyIdle()`` or a later step, unless the test claims it with
    /// ``value(of:)-(Task<Success,Error>)``. See <doc:ManualDispatcherReference#Async-code>.
    ///
    /// - Parameters:
    ///   - label: A short name, for the start task and the diagnostics.
    ///   - callSite: Where the task was started.
    ///   - operation: The task's body.
    /// - Returns: The task.
    @discardableResult
    public func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        let onMainActor = operation.isolation.map { $0 === MainActor.shared } ?? false
        let childJobs = Self.childJobs(isolated: operation.isolation != nil)
        let monitor = self.monitor
        var made: TrackedTaskScope?
        var prefersExecutor = false
        var immediate = false
        // The task's record and its start, in the one critical section of the start's dispatch.
        _ = self.record(nil, readingTheBoundWait: false) { schedule in
            let scope = TrackedTaskScope(
                monitor: monitor,
                id: schedule.tracked.begin(
                    label: label, callSite: callSite, onMainActor: onMainActor, childJobs: childJobs),
                label: label, callSite: callSite, countsChildJobs: childJobs == .counted)
            let start: @Sendable () -> Void = { scope.runStart() }
            let scheduled = schedule.accept(
                DispatchedTask(
                    unbound: onMainActor ? .foreground(start) : .background(start), label: label, callSite: callSite))
            scope.startTask = scheduled
            made = scope
            prefersExecutor = schedule.tracked.prefersTaskExecutor
            // In manual mode nothing runs the start inside this dispatch (auto-drain runs it at once): the body
            // begins on this thread, held there until `Task.immediate` has returned (see `heldForCaller`).
            immediate = Self.beginsTasksImmediately && !prefersExecutor && !schedule.autoDrain
            scope.heldForCaller = immediate
            return scheduled
        }
        guard let scope = made else { preconditionFailure("the start's dispatch did not accept it") }
        let id = scope.id
        // The scope is bound around the task's creation, which copies it into the task: bound inside the body, it
        // would cost the body the executor switches of the async `withValue`, on entry and on return.
        let task = TaskTracking.$scope.withValue(scope) {
            self.makeTrackedTask(
                scope, operation, onMainActor: onMainActor, immediate: immediate, prefersExecutor: prefersExecutor)
        }
        // The task is known by its key from here; a body held on this thread (now off it) may go on.
        let key = TrackedTaskKey(task)
        let released = self.monitor.withLock { schedule in
            schedule.tracked.register(key, id: id)
            return scope.releaseFromCaller()
        }
        if let released { released.continuation.resume(with: released.outcome) }
        return task
    }

    /// The tracked task itself, begun at once on this thread when `immediate` (see `startTask`'s comments), with
    /// its body in ``runTracked(_:_:isolation:)``.
    private func makeTrackedTask<Success: Sendable>(
        _ scope: TrackedTaskScope,
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Success,
        onMainActor: Bool,
        immediate: Bool,
        prefersExecutor: Bool
    ) -> Task<Success, any Error> {
        let isolation = operation.isolation  // nil for a nonisolated operation
        if isolation == nil, prefersExecutor, #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            // The package's own tests: every job of the task is a pending task of the dispatcher.
            return Task(executorPreference: self.taskExecutor) {
                try await Self.runTracked(scope, operation, isolation: nil)
            }
        }
        // A nonisolated task, its child tasks and the default actors they enter run their jobs through an executor
        // that counts them, so the task settles only when no part of it runs (where the runtime has task
        // executors). A task isolated to an actor has none (a `nil` preference): with one, the runtime sends it
        // through its actor's executor again at each call that takes an isolation, so a main-actor task would give up
        // the main actor there, which it does not do in production. The task's closure keeps the executor alive: a
        // runtime may not.
        if immediate, #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            // The start is pending: the body runs at once on this thread up to the gate and suspends there, so the
            // task's first trip through an executor is the one its start sends it on (with `Task { }` it would
            // run, suspend on the gate, and run again); it is held there until `Task.immediate` has returned, even
            // if another thread runs the start meanwhile. A main-actor operation begins here only when this thread
            // is on the main actor; otherwise it is enqueued there.
            if onMainActor {
                return Task.immediate { @MainActor in
                    try await Self.runTracked(scope, operation, isolation: MainActor.shared)
                }
            }
            let counting = isolation == nil ? TrackedTaskExecutor(scope: scope) : nil
            return Task.immediate(executorPreference: counting) {
                _ = counting
                return try await Self.runTracked(scope, operation, isolation: isolation)
            }
        }
        if onMainActor {
            // Enqueued on the main actor itself: from the start to the record of its end, nothing of this task
            // waits for a thread of the global executor, which other work in the process may be holding.
            return Task { @MainActor in try await Self.runTracked(scope, operation, isolation: MainActor.shared) }
        }
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            let counting = isolation == nil ? TrackedTaskExecutor(scope: scope) : nil
            return Task(executorPreference: counting) {
                _ = counting
                return try await Self.runTracked(scope, operation, isolation: isolation)
            }
        }
        return Task { try await Self.runTracked(scope, operation, isolation: isolation) }
    }

    /// Whether a tracked task's child tasks prefer an executor that counts their jobs (see `makeTrackedTask`): the
    /// dispatcher's `taskExecutor` or a `TrackedTaskExecutor`.
    private static func childJobs(isolated: Bool) -> TrackedTasks.ChildJobs {
        guard !isolated else { return .uncountedInIsolatedTask }
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) { return .counted }
        return .uncountedWithoutTaskExecutors
    }

    /// Whether the runtime has `Task.immediate` (Linux; macOS 26, iOS 26 and the matching releases).
    private static let beginsTasksImmediately: Bool = {
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) { return true }
        return false
    }()

    /// The body of a tracked task, run on the operation's own isolation, so that the operation and the records of
    /// its start and end share one executor: a main-actor task never hops through the global executor between
    /// them.
    private static func runTracked<Success: Sendable>(
        _ scope: TrackedTaskScope,
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Success,
        isolation: isolated (any Actor)?
    ) async throws -> Success {
        let monitor = scope.monitor
        let id = scope.id
        do {
            try await scope.waitForStart()
            try Task.checkCancellation()
        } catch {
            monitor.changeTrackedTasks { $0.tracked.finish(id, error: nil) }
            throw error
        }
        do {
            let value = try await operation()
            monitor.changeTrackedTasks { $0.tracked.finish(id, error: nil) }
            return value
        } catch {
            monitor.changeTrackedTasks { $0.tracked.finish(id, error: error) }
            throw error
        }
    }

    /// Awaits a task started with ``startTask(label:callSite:operation:)`` and claims its error, so the run
    /// methods and ``verifyIdle()`` do not report it; it is also this dispatcher's `TaskDispatcher.value(of:)`.
    ///
    /// ```swift
    /// await #expect(throws: FeedError.offline) { try await dispatcher.value(of: load) }
    /// ```
    ///
    /// Called from the test, the await is bounded by ``waitLimit``: a task that needs the test's next step, or one this
    /// dispatcher did not start, cannot finish while the test waits here (a `waitLimit` of zero or less awaits the
    /// latter without a bound). Inside a tracked task the await is part of its settling, and not bounded.
    ///
    /// - Parameter task: The task to await.
    /// - Returns: The task's value.
    /// - Throws: What the task threw, `CancellationError` (cancelled while it waits for a task this dispatcher did
    ///   not start), or ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/waitTimedOut(after:)``.
    nonisolated(nonsending) public func value<Success: Sendable>(of task: Task<Success, any Error>) async throws
        -> Success
    {
        try await self.boundedValue(of: task)
    }

    /// Awaits a task that cannot throw, within ``waitLimit``: a plain `Task { await … }`, which `await task.value`
    /// would wait for without a bound. Bounded as ``value(of:)-(Task<Success,Error>)`` is for a task this dispatcher
    /// did not start.
    ///
    /// - Parameter task: The task to await.
    /// - Returns: The task's value.
    /// - Throws: `CancellationError` if the calling task is cancelled while it waits, or ``ManualDispatcherError`` of
    ///   kind ``ManualDispatcherError/Kind/waitTimedOut(after:)``.
    nonisolated(nonsending) public func value<Success: Sendable>(of task: Task<Success, Never>) async throws -> Success
    {
        try await self.boundedValue(of: task)
    }

    /// ``value(of:)-(Task<Success,Error>)`` for a task of either kind.
    nonisolated(nonsending) private func boundedValue<Success: Sendable, TaskFailure>(
        of task: Task<Success, TaskFailure>
    )
        async throws -> Success
    {
        // Called from a task this dispatcher tracks: that task waits on `task`, and settles when `task` does.
        if let scope = self.monitor.trackedCaller {
            return try await self.monitor.value(of: task, awaitedBy: scope)
        }
        let key = TrackedTaskKey(task)
        self.monitor.changeTrackedTasks { $0.tracked.claim(key) }
        // A task this dispatcher did not start: nothing to wait for but its value, within the limit, since nothing
        // here can make it finish. One of its own that finished (its record gone) gives its value at once. A limit
        // of zero or less cannot check once whether a task has finished (its value would race the limit), so it
        // waits.
        let (tracked, finished) = self.monitor.withLock { ($0.tracked.id(of: key), $0.tracked.finishedRecently(key)) }
        guard let id = tracked else {
            let limit = self.waitLimit
            guard limit > .zero, !finished else { return try await task.value }
            // The test waits here: in auto-advance, the clock may move as tracked tasks settle (`ClockHold`).
            self.beginUntrackedValueWait()
            defer { self.monitor.withLock { $0.clockHold.untrackedValueWaits -= 1 } }
            if let value = try await BoundedValue.value(of: task, within: Self.deadline(after: limit)) {
                return value
            }
            let failure = self.monitor.withLock { $0.failure(.untrackedTaskNotFinished(limit: limit)) }
            throw ManualDispatcherError(failure)
        }
        let limit = self.waitLimit
        let deadline = Self.deadline(after: limit)
        let waiter = self.monitor.withLock { $0.waiters.makeID() }
        // Woken by the task's end, which the dispatcher records; bounded, since the task may need the test.
        while true {
            switch await self.suspend(until: .trackedTaskFinished(id), id: waiter, deadline: deadline) {
            case .conditionMet:
                // Finished, or a runaway auto-advance stopped the clock (the condition holds at once if it already
                // had): report the runaway rather than wait for a task that will not finish.
                let (finished, runaway) = self.monitor.withLock { schedule -> (Bool, Failure?) in
                    if schedule.tracked.hasFinished(id) { return (true, nil) }
                    guard let runaway = schedule.takeDeferredFailure() else { return (false, nil) }
                    schedule.tracked.unclaim(key)
                    return (false, runaway)
                }
                if let runaway { throw ManualDispatcherError(runaway) }
                if finished { return try await task.value }  // it has finished: this returns at once
                // Another call took the runaway's failure first, and the task has not finished: wait on, within the
                // same limit.
                continue
            case .cancelled:
                self.monitor.withLock { $0.tracked.unclaim(key) }  // an error it throws later is still reported
                throw CancellationError()
            case .timedOut:
                let failure = self.monitor.withLock { schedule -> Failure? in
                    guard let standing = schedule.tracked.standing(of: id), !schedule.tracked.hasFinished(id) else {
                        return nil  // it finished as the timer fired
                    }
                    schedule.tracked.unclaim(key)  // an error it throws later is still reported
                    if let runaway = schedule.takeDeferredFailure() { return runaway }
                    let holding = schedule.mode == .autoAdvance ? schedule.tracked.unsettled : []
                    return schedule.failure(
                        .taskNotFinished(
                            method: "value(of:)", limit: limit, task: standing, mode: schedule.mode, holding: holding)
                    )
                }
                guard let failure else { return try await task.value }
                throw ManualDispatcherError(failure)
            }
        }
    }

    /// The test begins to await a task the dispatcher did not start: in auto-advance, a jump of the clock that was
    /// held (see ``ClockHold``) is made now, and tracked tasks may move the clock as they settle until the wait ends.
    private func beginUntrackedValueWait() {
        let thread = currentThreadIdentity()
        let drain = self.monitor.withLock { schedule in
            schedule.clockHold.untrackedValueWaits += 1
            schedule.clockHold.endHold()
            return schedule.mode == .autoAdvance && schedule.claimForAutoDrain(thread: thread)
        }
        if drain { self.drainAutomatically() }
    }

    /// The number of tasks started with ``startTask(label:callSite:operation:)`` that have not finished: their
    /// start is pending, or their operation has not returned.
    public var unfinishedTaskCount: Int {
        self.monitor.withLock { $0.tracked.unfinishedCount }
    }
}

extension Monitor where Value == Schedule {
    /// Awaits `task` from the tracked task of `scope` (or a child task of it) on this monitor's dispatcher, without a
    /// bound: claims the error of `task` if the dispatcher tracks it, and records the await, so that the caller is
    /// settled while `task` is.
    nonisolated(nonsending) func value<Success: Sendable, TaskFailure>(
        of task: Task<Success, TaskFailure>, awaitedBy scope: TrackedTaskScope
    ) async throws -> Success {
        let key = TrackedTaskKey(task)
        let caller = scope.id
        let awaitingTask = scope.currentTask
        let awaited = self.changeTrackedTasks { schedule -> UInt64? in
            schedule.tracked.claim(key)
            guard let awaited = schedule.tracked.id(of: key) else { return nil }
            schedule.tracked.beginAwaiting(caller, awaited, byAnotherTask: awaitingTask != scope.taskIdentity)
            return awaited
        }
        defer {
            if let awaited { self.changeTrackedTasks { $0.tracked.endAwaiting(caller, awaited) } }
        }
        return try await task.value
    }

    /// Asks auto-advance again whether the clock may move, as a change to the tracked tasks does: an async drain
    /// stopped waiting without moving the clock, and a jump held while it waited (it would have made the jump
    /// itself, so the hold set no timer) is made now, or held with a timer (see ``ClockHold``).
    func retryAutoAdvance() {
        self.changeTrackedTasks { _ in }
    }

    /// Changes what the schedule knows of its tracked tasks, and resumes the async waits the change satisfies
    /// (a task that settles can end an async drain's wait), after unlocking.
    ///
    /// In ``ManualDispatcher/Mode/autoAdvance``, a change that leaves every tracked task settled with nothing due
    /// lets the clock move while the test waits (see ``ClockHold``): the caller drains, as a dispatch would. The
    /// waits the change ends are ended first: a test whose awaited task just finished no longer waits, so the clock
    /// does not run on past the point where it resumes.
    @discardableResult
    func changeTrackedTasks<Result>(_ change: (inout Schedule) -> Result) -> Result {
        let thread = currentThreadIdentity()
        let (result, woken, drain) = self.withLock { schedule in
            let result = change(&schedule)
            let woken = schedule.wokenWaiters()
            let drain = schedule.mode == .autoAdvance && schedule.claimForAutoDrain(thread: thread)
            return (result, woken, drain)
        }
        if let woken { WaitResumer.resumeAll(woken) }
        if drain { self.drainAutomatically() }
        return result
    }
}
