import Dispatch
import TaskDispatch

extension ManualDispatcher {
    /// Runs every task, waiting up to `limit` of real time for the tracked tasks to settle in between: the
    /// async form of ``runUntilIdle(maxTasks:)``, for async code started with
    /// ``startTask(label:callSite:operation:)``.
    ///
    /// ```swift
    /// @Test @MainActor func refreshLoadsTheFeed() async throws {
    ///     let dispatcher = ManualDispatcher()
    ///     let model = FeedModel(dispatcher: dispatcher)
    ///
    ///     model.refresh()                                        // dispatcher.startTask { … }
    ///     try await dispatcher.runUntilIdle(waitingUpTo: .seconds(10))
    ///     #expect(model.state == .loaded)                        // the task has finished
    /// }
    /// ```
    ///
    /// A tracked task runs partly outside the dispatcher: after its start, and after each `await`, its code runs
    /// on its own executor (the main actor, or the global executor), concurrently with the test. So the call
    /// alternates two phases until both are done:
    ///
    /// 1. **Run** every task that is due, as ``runUntilIdle(maxTasks:)`` does, on the calling thread.
    /// 2. **Wait** until every tracked task has *settled*, or a task falls due, suspended (no thread blocked, no
    ///    polling: the event itself resumes the call). A tracked task is settled when it has finished, or when it
    ///    is suspended on work the dispatcher owns: an awaitable dispatch of this dispatcher (`runInBackground`,
    ///    `runOnMainActor`) that has not run, a sleep on ``clock``, a job held on ``taskExecutor``, its own start,
    ///    or ``value(of:)`` of another tracked task that is settled. The dispatcher knows this from its own
    ///    records, kept as those waits begin and end.
    ///
    /// When nothing is due and every tracked task is settled, the clock jumps to the next delayed task (a sleep
    /// wakes this way too) and the two phases start again; when no delayed task is left, the call returns. Time
    /// moves only between settled states, so a task woken by a sleep has dispatched its next step before the
    /// clock moves past it.
    ///
    /// A tracked task that stays unsettled for `limit` of real time awaits something the dispatcher does not
    /// control (a network call, another actor, `Task.sleep`, a continuation resumed by another thread, a task's
    /// `value` awaited without ``value(of:)``): the call throws
    /// ``ManualDispatcherError/Kind/unsettledTasks(after:)`` naming each such task, its call site, and the last
    /// thing the dispatcher saw it do. `limit` is real time; a passing call spends none of it waiting for a timer.
    ///
    /// What settling does not see: a task that runs child tasks concurrently (`async let`, a task group) counts
    /// as settled as soon as one child waits on the dispatcher, and a `Task {}` created inside a tracked task
    /// reports its waits as the tracked task's (task-local values are inherited). Code not started through
    /// ``startTask(label:callSite:operation:)`` is not tracked at all.
    ///
    /// - Parameters:
    ///   - maxTasks: The most tasks to run in the whole call; by default, every task pending when the call starts
    ///     plus ``defaultMaxTasks``.
    ///   - limit: The longest real time to wait, each time, for the tracked tasks to settle or a task to fall due.
    /// - Returns: The number of tasks run.
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/unsettledTasks(after:)`` when a
    ///   tracked task did not settle within `limit`; ``ManualDispatcherError/Kind/unobservedTaskError`` when a
    ///   tracked task threw an error nobody claimed (before or during the call);
    ///   ``ManualDispatcherError/Kind/runawayTasks(maxTasks:)`` past the bound; the errors of one run at a time
    ///   (``ManualDispatcherError/Kind/reentrantRun``, ``ManualDispatcherError/Kind/concurrentRun``); or
    ///   `CancellationError` when the calling task is cancelled while it waits.
    @discardableResult
    public func runUntilIdle(maxTasks: Int? = nil, waitingUpTo limit: Duration) async throws -> Int {
        try await self.settle(
            method: "runUntilIdle(waitingUpTo: \(formatTime(limit.nanosecondsSaturated)))",
            maxTasks: maxTasks,
            limit: limit,
            movesClockToTarget: false
        ) { _ in TaskKey.latestTime }
    }

    /// Moves the virtual clock forward by `duration`, running the tasks that fall due and waiting up to `limit`
    /// of real time for the tracked tasks to settle at each step: the async form of
    /// ``advance(by:maxTasks:)``.
    ///
    /// A retry with back-off, tested in microseconds:
    ///
    /// ```swift
    /// model.refresh()                                            // fails, sleeps 1 s on dispatcher.clock
    /// try await dispatcher.advance(by: .milliseconds(999), waitingUpTo: .seconds(10))
    /// #expect(model.attempts == 1)
    /// try await dispatcher.advance(by: .milliseconds(1), waitingUpTo: .seconds(10))
    /// #expect(model.attempts == 2)                               // the retry ran, and sleeps 2 s
    /// ```
    ///
    /// It runs what is due now, waits until the tracked tasks settle (see
    /// ``runUntilIdle(maxTasks:waitingUpTo:)`` for what that means), then moves the clock to the next delayed
    /// task due at or before the target, and repeats; when none is left, the clock shows the target. A sleeping
    /// task woken on the way has run, up to its next wait on the dispatcher, before the clock moves on.
    ///
    /// - Parameters:
    ///   - duration: How far to move the clock; zero runs what is due and waits for the tracked tasks to settle.
    ///   - maxTasks: The most tasks to run in the whole call; by default, every task pending when the call starts
    ///     plus ``defaultMaxTasks``.
    ///   - limit: The longest real time to wait, each time, for the tracked tasks to settle or a task to fall due.
    /// - Returns: The number of tasks run.
    /// - Throws: What ``runUntilIdle(maxTasks:waitingUpTo:)`` throws, and
    ///   ``ManualDispatcherError/Kind/clockMovedBackwards(from:to:)`` for a negative `duration`.
    @discardableResult
    public func advance(by duration: Duration, maxTasks: Int? = nil, waitingUpTo limit: Duration) async throws -> Int {
        let nanoseconds = duration.nanosecondsSaturated
        return try await self.settle(
            method: "advance(by: \(formatDuration(duration)), waitingUpTo: \(formatTime(limit.nanosecondsSaturated)))",
            maxTasks: maxTasks,
            limit: limit,
            movesClockToTarget: true
        ) { now in
            Self.time(now, movedBy: nanoseconds)
        }
    }

    /// Moves the virtual clock forward to `time`, running the tasks that fall due and waiting up to `limit` of
    /// real time for the tracked tasks to settle at each step: the async form of ``advance(to:maxTasks:)``.
    ///
    /// See ``advance(by:maxTasks:waitingUpTo:)``.
    ///
    /// - Parameters:
    ///   - time: The virtual time to move to; the current time runs what is due and waits for the tracked tasks.
    ///   - maxTasks: The most tasks to run in the whole call; by default, every task pending when the call starts
    ///     plus ``defaultMaxTasks``.
    ///   - limit: The longest real time to wait, each time, for the tracked tasks to settle or a task to fall due.
    /// - Returns: The number of tasks run.
    /// - Throws: What ``advance(by:maxTasks:waitingUpTo:)`` throws.
    @discardableResult
    public func advance(to time: Duration, maxTasks: Int? = nil, waitingUpTo limit: Duration) async throws -> Int {
        let nanoseconds = time.nanosecondsSaturated
        return try await self.settle(
            method: "advance(to: \(formatDuration(time)), waitingUpTo: \(formatTime(limit.nanosecondsSaturated)))",
            maxTasks: maxTasks,
            limit: limit,
            movesClockToTarget: true
        ) { _ in nanoseconds }
    }

    /// The number of tracked tasks that are not settled: neither finished nor suspended on the dispatcher's own
    /// work (see ``runUntilIdle(maxTasks:waitingUpTo:)``).
    ///
    /// It changes as the tasks run on their own executors; read it when they are known to be quiet.
    public var unsettledTaskCount: Int {
        self.monitor.withLock { $0.tracked.unsettledCount }
    }

    // MARK: - Machinery

    /// Where one pass of an async drain stopped.
    private enum SettleOutcome {
        /// Nothing is due up to the target and every tracked task is settled.
        case idle
        /// Nothing is due now, and some tracked task is not settled: wait for it.
        case unsettled
    }

    /// Runs and waits, pass after pass, until nothing is due up to the target and every tracked task is settled.
    private func settle(
        method: String,
        maxTasks: Int?,
        limit: Duration,
        movesClockToTarget: Bool,
        target: (_ now: Int64) -> Int64
    ) async throws -> Int {
        let id = self.monitor.withLock { $0.waiters.makeID() }
        var targetTime: Int64 = 0
        let first = try self.claimRun(method) { schedule in
            targetTime = target(schedule.now)
            guard targetTime < schedule.now else { return nil }
            return schedule.failure(.clockMovedBackwards(method: method, from: schedule.now, to: targetTime))
        }
        let bound = Self.bound(maxTasks: maxTasks, from: first)
        var ran = 0
        var claimed = true
        while true {
            if !claimed { try self.claimRun(method) }
            let outcome: SettleOutcome
            do {
                outcome = try self.settlingPass(
                    method, bound: bound, ran: &ran, from: first, target: targetTime)
            } catch {
                self.endRun()
                throw error
            }
            switch outcome {
            case .idle:
                self.endRun(movingClockTo: movesClockToTarget ? targetTime : nil)
                // An error thrown during the call is this call's to report, not the next one's.
                if let failure = self.monitor.withLock({ $0.unobservedErrorsFailure(method: method) }) {
                    throw ManualDispatcherError(failure)
                }
                return ran
            case .unsettled:
                self.endRun()
                claimed = false
                // Each wait has the whole limit: running the tasks in between takes none of it.
                switch await self.suspend(until: .dueTaskOrSettled, id: id, deadline: Self.deadline(after: limit)) {
                case .conditionMet:
                    continue
                case .cancelled:
                    throw CancellationError()
                case .timedOut:
                    let failure = self.monitor.withLock { schedule -> Failure? in
                        let unsettled = schedule.tracked.unsettled
                        guard !unsettled.isEmpty else { return nil }  // settled as the timer fired
                        return schedule.failure(.tasksNotSettled(method: method, limit: limit, tasks: unsettled))
                    }
                    if let failure { throw ManualDispatcherError(failure) }
                }
            }
        }
    }

    /// One pass under the run claim: runs what is due; once nothing is due and the tracked tasks are settled,
    /// jumps the clock to the next delayed task up to `target` and goes on.
    private func settlingPass(
        _ method: String,
        bound: Int,
        ran: inout Int,
        from start: RunStart,
        target: Int64
    ) throws(ManualDispatcherError) -> SettleOutcome {
        var jump = false
        while true {
            if ran >= bound,
                let failure = self.runawayFailure(method, bound: bound, ran: ran, from: start, clockLimit: target)
            {
                throw ManualDispatcherError(failure)
            }
            if let step = self.monitor.withLock({ $0.next(in: .any, jumpingClockTo: jump ? target : nil) }) {
                self.execute(step.work)
                ran += 1
                jump = false
                continue
            }
            if jump { return .idle }
            guard self.monitor.withLock({ $0.tracked.unsettledCount == 0 }) else { return .unsettled }
            jump = true
        }
    }
}
