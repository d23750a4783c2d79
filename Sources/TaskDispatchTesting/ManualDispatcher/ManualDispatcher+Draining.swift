import TaskDispatch

extension ManualDispatcher {
    /// Runs the tasks that are due now and were pending when called, not those they dispatch.
    ///
    /// Use it to run one "turn" of work: everything the previous step queued, and nothing more.
    ///
    /// - Returns: The number of tasks that ran (zero is not an error).
    /// - Throws: ``ManualDispatcherError/Kind/reentrantRun`` when called from inside a task.
    /// - Complexity: O(k) for k tasks, in every order.
    @discardableResult
    public func runCurrent() throws(ManualDispatcherError) -> Int {
        let start = try self.claimRun("runCurrent()")
        defer { self.endRun() }
        var ran = 0
        while let step = self.monitor.withLock({ $0.next(in: .any, jumpingClockTo: nil, before: start.firstSequence) })
        {
            self.execute(step.work)
            ran += 1
        }
        return ran
    }

    /// Runs tasks until none is pending, including the tasks they dispatch, moving the clock to each delayed
    /// task as it becomes the next one.
    ///
    /// ```swift
    /// service.load()
    /// try dispatcher.runUntilIdle()
    /// #expect(service.state == .loaded)
    /// ```
    ///
    /// This is the synchronous form, for synchronous code. In async code the compiler picks
    /// ``runUntilIdle(waitingUpTo:)``, which also waits for tasks started with
    /// ``startTask(label:callSite:operation:)`` to settle. Tasks that never fall due (their delay reaches past
    /// the clock's range) stay pending. The drain stops at the dispatcher's ``runawayLimit``. Called on the main
    /// actor, it does not move the clock once it has woken a tracked task (see ``advance(by:)``); nor do
    /// ``run(untilTaskLabeled:)`` and ``run(until:)``.
    ///
    /// - Returns: The number of tasks that ran.
    /// - Throws: ``ManualDispatcherError/Kind/runawayTasks(limit:)`` when a task keeps rescheduling itself;
    ///   ``ManualDispatcherError/Kind/unsettledTasks(after:)`` when tracked tasks are still running at the end,
    ///   or on the main actor when it would move the clock past a tracked task it woke, which only the async form
    ///   can wait for; or ``ManualDispatcherError/Kind/reentrantRun``.
    /// - Complexity: O(k) for k immediate tasks, O(k log n) when they are delayed.
    @discardableResult
    public func runUntilIdle() throws(ManualDispatcherError) -> Int {
        let method = "runUntilIdle()"
        let start = try self.claimRun(method)
        defer { self.endRun() }
        let holdingClock = MainActorExecution.isOnMainActor
        let ran = try self.drain(method, from: start, clockLimit: TaskKey.latestTime, holdingClock: holdingClock)
        try self.checkSettledAfterSynchronousDrain(method)
        return ran
    }

    /// Moves the virtual clock forward by `duration`, running every task that falls due on the way, in
    /// (due time, dispatch order), including tasks those tasks schedule inside the window.
    ///
    /// ```swift
    /// model.searchTextChanged("swi")
    /// try dispatcher.advance(by: .milliseconds(299))
    /// #expect(model.searchCount == 0)        // still debouncing
    /// try dispatcher.advance(by: .milliseconds(1))
    /// #expect(model.searchCount == 1)
    /// ```
    ///
    /// Due tasks run first, at the current time; then the clock jumps to each delayed task in turn; at the
    /// end it stands at the target time, or at the end of the clock's range (about 292 years) if the target
    /// lies beyond it. The clock is read, checked and moved while this call holds the run, so a run on another
    /// thread cannot slip in between. In async code the compiler picks ``advance(by:waitingUpTo:)``.
    ///
    /// Called on the main actor, a synchronous step of time never moves the clock past a tracked task it cannot wait
    /// for, and throws ``ManualDispatcherError/Kind/unsettledTasks(after:)`` naming the async form instead: at its
    /// start, when a main-actor tracked task waits to run (the caller holds the main actor); on the way, once it has
    /// woken a tracked task (run its start, or a timer or an awaited dispatch it waited on), with the clock where
    /// the task woke. The rule looks at what the call did, not at how far the woken task got, so it holds in every
    /// run or in none. Off the main actor, tracked tasks run on their own executors and this call neither waits for
    /// nor reports them; ``verifyIdle()`` reports those that never finish. In async code, use the async form.
    ///
    /// - Parameter duration: How far to move the clock; zero runs what is due now.
    /// - Returns: The number of tasks that ran.
    /// - Throws: ``ManualDispatcherError/Kind/clockMovedBackwards(from:to:)`` for a negative duration,
    ///   ``ManualDispatcherError/Kind/unsettledTasks(after:)`` on the main actor as above,
    ///   ``ManualDispatcherError/Kind/runawayTasks(limit:)``, or ``ManualDispatcherError/Kind/reentrantRun``.
    @discardableResult
    public func advance(by duration: Duration) throws(ManualDispatcherError) -> Int {
        let nanoseconds = duration.nanosecondsRoundedDown
        return try self.advance(method: "advance(by: \(formatDuration(duration)))") { now in
            Self.time(now, movedBy: nanoseconds)
        }
    }

    /// Moves the virtual clock to `time`, running every task that falls due on the way; otherwise as
    /// ``advance(by:)``.
    ///
    /// - Parameter time: The new time, measured from the dispatcher's creation, as ``now``; not earlier than
    ///   ``now``.
    /// - Returns: The number of tasks that ran.
    /// - Throws: What ``advance(by:)`` throws.
    @discardableResult
    public func advance(to time: Duration) throws(ManualDispatcherError) -> Int {
        let nanoseconds = time.nanosecondsRoundedDown
        return try self.advance(method: "advance(to: \(formatDuration(time)))") { _ in nanoseconds }
    }

    private func advance(
        method: String,
        target: (_ now: Int64) -> Int64
    ) throws(ManualDispatcherError) -> Int {
        var targetTime: Int64 = 0
        let onMainActor = MainActorExecution.isOnMainActor
        let start = try self.claimRun(method) { schedule in
            targetTime = target(schedule.now)
            if targetTime < schedule.now {
                return schedule.failure(.clockMovedBackwards(method: method, from: schedule.now, to: targetTime))
            }
            // A main-actor tracked task cannot run while this caller holds the main actor: moving the clock now would
            // move it past the sleep that task is about to start.
            guard onMainActor, targetTime > schedule.now, schedule.tracked.hasUnsettledOnMainActor else { return nil }
            return schedule.failure(
                .clockMovedWhileUnsettled(method: method, tasks: schedule.tracked.unsettledOnMainActor))
        }
        let ran: Int
        do throws(ManualDispatcherError) {
            ran = try self.drain(method, from: start, clockLimit: targetTime, holdingClock: onMainActor)
            // The same rule for the last stretch, from the last task's time to the target.
            if onMainActor,
                let failure = self.monitor.withLock({ schedule in
                    targetTime > schedule.now ? Self.clockHeld(method, in: &schedule, since: start) : nil
                })
            {
                throw ManualDispatcherError(failure)
            }
        } catch {
            self.endRun()
            throw error
        }
        self.endRun(movingClockTo: targetTime)
        return ran
    }

    /// The failure of a synchronous drain called on the main actor that would move the clock on after waking tracked
    /// tasks (running a start, or ending a wait on the dispatcher's own work) since `start`; `nil` if it woke none.
    ///
    /// A task it woke runs on its own (on the main actor, which the caller holds, or on another executor) until it
    /// waits on the dispatcher again, and a synchronous call cannot wait for that: moving the clock would pass the
    /// sleeps and delays the task is about to start, and the test would see the clock at its target with the work
    /// undone, or, where the task runs elsewhere, a timing that depends on the threads. The rule looks only at what
    /// the call did, never at how far the tasks got, so it holds the clock in every run or in none.
    static func clockHeld(_ method: String, in schedule: inout Schedule, since start: RunStart) -> Failure? {
        guard schedule.tracked.wakeups != start.wakeups else { return nil }
        return schedule.failure(
            .clockMovedAfterWaking(method: method, tasks: schedule.tracked.woken(since: start.wakeups)))
    }

    /// Throws when a synchronous drain ends with tracked tasks running on their own executors: the drain cannot
    /// wait for them, and returning would let a test pass with their work undone.
    private func checkSettledAfterSynchronousDrain(_ method: String) throws(ManualDispatcherError) {
        let failure = self.monitor.withLock { schedule -> Failure? in
            guard schedule.tracked.unsettledCount > 0 else { return nil }
            return schedule.failure(.tasksNotSettled(method: method, limit: nil, tasks: schedule.tracked.unsettled))
        }
        if let failure { throw ManualDispatcherError(failure) }
    }

    /// Runs tasks, jumping the clock up to `clockLimit`, until none is left or `stop` says so. The caller holds
    /// the claim.
    ///
    /// With `holdingClock`, the clock does not move once the drain has woken a tracked task: it throws instead
    /// (see ``clockHeld(_:in:since:)``).
    func drain(
        _ method: String,
        from start: RunStart,
        clockLimit: Int64,
        holdingClock: Bool = false,
        stop: ((RunRecord) -> Bool)? = nil
    ) throws(ManualDispatcherError) -> Int {
        let bound = self.bound(from: start)
        var ran = 0
        while true {
            if ran >= bound {
                let failure = self.runawayFailure(method, bound: bound, ran: ran, from: start, clockLimit: clockLimit)
                guard let failure else { return ran }
                throw ManualDispatcherError(failure)
            }
            var held = false
            var series: Failure?
            let next = self.monitor.withLock { schedule -> Schedule.Step? in
                // A drain to idle never gets past a live repeating series.
                if stop == nil, clockLimit == TaskKey.latestTime, let tick = schedule.seriesTickBlockingIdle() {
                    series = schedule.failure(.liveSeries(method: method, tick: tick, limit: self.runawayLimit))
                    return nil
                }
                if holdingClock, schedule.tracked.wakeups != start.wakeups, !schedule.hasDueTask,
                    schedule.hasRunnableTask(jumpingClockTo: clockLimit)
                {
                    held = true  // the next task needs the clock to move
                    return nil
                }
                return schedule.next(in: .any, jumpingClockTo: clockLimit)
            }
            guard let step = next else {
                if let series { throw ManualDispatcherError(series) }
                if held, let failure = self.monitor.withLock({ Self.clockHeld(method, in: &$0, since: start) }) {
                    throw ManualDispatcherError(failure)
                }
                return ran
            }
            self.execute(step.work)
            ran += 1
            if let stop {
                // The task has ended: the condition runs between tasks, where `verifyIdle()` sees none running.
                self.monitor.withLock { $0.endExecution() }
                if stop(step.run) { return ran }
            }
        }
    }

    /// The most tasks a draining call may run: every task pending when it started plus ``runawayLimit``.
    func bound(from start: RunStart) -> Int {
        let (sum, overflow) = start.pendingCount.addingReportingOverflow(self.runawayLimit)
        return overflow ? .max : sum
    }

    /// The runaway failure of a drain that has run `ran` tasks, its `bound`, while tasks can still run up to
    /// `clockLimit`; `nil` when none can.
    func runawayFailure(
        _ method: String,
        bound: Int,
        ran: Int,
        from start: RunStart,
        clockLimit: Int64
    ) -> Failure? {
        self.monitor.withLock { schedule -> Failure? in
            guard schedule.hasRunnableTask(jumpingClockTo: clockLimit) else { return nil }
            let misuse = Failure.Misuse.runawayTasks(
                method: method,
                maxTasks: self.runawayLimit,
                ran: ran,
                firstSequence: start.firstSequence
            )
            return schedule.failure(misuse)
        }
    }

    /// `now` moved by `nanoseconds`, saturating at the ends of `Int64` instead of overflowing.
    static func time(_ now: Int64, movedBy nanoseconds: Int64) -> Int64 {
        let (target, overflow) = now.addingReportingOverflow(nanoseconds)
        return overflow ? (nanoseconds < 0 ? .min : .max) : target
    }

    // MARK: - Running until something happens

    /// Runs tasks, as ``runUntilIdle()`` does, until a task labeled `label` has run.
    ///
    /// ```swift
    /// service.refresh()
    /// try dispatcher.run(untilTaskLabeled: "parse")
    /// #expect(service.parsedCount == 3)      // "deliver" has not run yet
    /// ```
    ///
    /// - Parameter label: The label to wait for.
    /// - Returns: The run of the labeled task.
    /// - Throws: ``ManualDispatcherError/Kind/conditionNotMet`` when the tasks run out first,
    ///   ``ManualDispatcherError/Kind/runawayTasks(limit:)``, or ``ManualDispatcherError/Kind/reentrantRun``.
    @discardableResult
    public func run(untilTaskLabeled label: String) throws(ManualDispatcherError) -> TaskRun {
        let method = "run(untilTaskLabeled: \"\(label)\")"
        let start = try self.claimRun(method)
        defer { self.endRun() }
        var found: RunRecord?
        let holdingClock = MainActorExecution.isOnMainActor
        let ran = try self.drain(method, from: start, clockLimit: TaskKey.latestTime, holdingClock: holdingClock) {
            run in
            guard run.task.label == label else { return false }
            found = run
            return true
        }
        let (failure, callSites) = self.monitor.withLock { schedule -> (Failure?, [CallSite]) in
            (
                found == nil
                    ? schedule.failure(
                        .labelNotFound(method: method, label: label, ran: ran, unsettled: schedule.tracked.unsettled))
                    : nil,
                schedule.callSites.sites
            )
        }
        if let found { return TaskRun(found, callSites: callSites) }
        throw ManualDispatcherError(failure.unsafelyUnwrapped)  // set whenever `found` is nil
    }

    /// Runs tasks, as ``runUntilIdle()`` does, until `condition` holds.
    ///
    /// The condition is checked before the first task and after each task, on the calling thread, while the call
    /// holds the run (a run method called from the condition throws ``ManualDispatcherError/Kind/reentrantRun``,
    /// the first check included). When the tasks run out, the call returns if the last check held, and throws
    /// otherwise.
    ///
    /// ```swift
    /// try dispatcher.run(until: { service.retryCount == 2 })
    /// ```
    ///
    /// - Parameter condition: The state to reach.
    /// - Returns: The number of tasks that ran.
    /// - Throws: ``ManualDispatcherError/Kind/conditionNotMet`` when the tasks run out first,
    ///   ``ManualDispatcherError/Kind/runawayTasks(limit:)``, or ``ManualDispatcherError/Kind/reentrantRun``.
    @discardableResult
    public func run(until condition: () -> Bool) throws(ManualDispatcherError) -> Int {
        let method = "run(until:)"
        return try withoutActuallyEscaping(condition) { condition throws(ManualDispatcherError) in
            let start = try self.claimRun(method)
            defer { self.endRun() }
            // Under the claim, as every later check: a run the condition makes is refused the same way each time.
            if condition() { return 0 }
            var satisfied = false
            let holdingClock = MainActorExecution.isOnMainActor
            let ran = try self.drain(method, from: start, clockLimit: TaskKey.latestTime, holdingClock: holdingClock) {
                _ in
                satisfied = condition()
                return satisfied
            }
            guard satisfied else {
                throw ManualDispatcherError(
                    self.monitor.withLock {
                        $0.failure(.conditionNotMet(method: method, ran: ran, unsettled: $0.tracked.unsettled))
                    }
                )
            }
            return ran
        }
    }

    // MARK: - Async drains, which wait for tracked tasks to settle

    /// Runs every task, and waits for the tracked tasks to settle in between: the async form of
    /// ``runUntilIdle()``, which async code gets.
    ///
    /// ```swift
    /// model.refresh()                                    // dispatcher.startTask { … }
    /// try await dispatcher.runUntilIdle()
    /// #expect(model.state == .loaded)                    // the task has finished
    /// ```
    ///
    /// It runs what is due, waits until every tracked task has *settled* (finished, or suspended on work the
    /// dispatcher owns), moves the clock to the next delayed task, and repeats until nothing is left. A tracked task
    /// that does not settle awaits something the dispatcher does not control, and the call names it. While it
    /// waits, a tracked task on the main actor that awaits a dispatch runs the due tasks for it, inside that dispatch.
    /// How settling works, and what it cannot see: <doc:TestingAsyncCode#Run-until-idle>.
    ///
    /// - Parameter limit: Replaces ``waitLimit`` for this call only; leave it out (see <doc:Limits>).
    /// - Returns: The number of tasks run.
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/unsettledTasks(after:)``,
    ///   ``ManualDispatcherError/Kind/unobservedTaskError`` (an error a tracked task threw that nobody claimed),
    ///   ``ManualDispatcherError/Kind/runawayTasks(limit:)``, ``ManualDispatcherError/Kind/reentrantRun`` or
    ///   ``ManualDispatcherError/Kind/concurrentRun`` (another thread's run did not end within the limit; while it
    ///   runs, this call suspends, on the main actor too); `CancellationError` when the calling task is cancelled
    ///   while it waits.
    @discardableResult
    nonisolated(nonsending) public func runUntilIdle(waitingUpTo limit: Duration? = nil) async throws -> Int {
        try await self.settle(method: self.method("runUntilIdle", limit: limit), limit: limit, movesClock: false) { _ in
            TaskKey.latestTime
        }
    }

    /// Moves the virtual clock forward by `duration`, running the tasks that fall due and waiting for the tracked
    /// tasks to settle at each step: the async form of ``advance(by:)``.
    ///
    /// A retry with back-off, tested in microseconds:
    ///
    /// ```swift
    /// model.refresh()                                    // fails, sleeps 1 s on dispatcher.clock
    /// try await dispatcher.advance(by: .milliseconds(999))
    /// #expect(model.attempts == 1)
    /// try await dispatcher.advance(by: .milliseconds(1))
    /// #expect(model.attempts == 2)                       // the retry ran, and sleeps 2 s
    /// ```
    ///
    /// It runs what is due now, waits until the tracked tasks settle (see ``runUntilIdle(waitingUpTo:)``), then
    /// moves the clock to the next delayed task due at or before the target, and repeats; when none is left, the
    /// clock shows the target. A call that throws can leave the clock short of the target, where it stopped, with
    /// later tasks up to the target still pending. A tracked task that throws on the way is
    /// reported by this call unless the test already awaits it with ``value(of:)-(Task<Success,Error>)``: to expect that error, let
    /// ``Mode/autoAdvance`` move the clock while the test awaits the task.
    ///
    /// - Parameters:
    ///   - duration: How far to move the clock; zero is ``settle(waitingUpTo:)``.
    ///   - limit: Replaces ``waitLimit`` for this call only; leave it out (see [Limits](doc:Limits)).
    /// - Returns: The number of tasks run.
    /// - Throws: What ``runUntilIdle(waitingUpTo:)`` throws, and
    ///   ``ManualDispatcherError/Kind/clockMovedBackwards(from:to:)`` for a negative `duration`.
    @discardableResult
    nonisolated(nonsending) public func advance(by duration: Duration, waitingUpTo limit: Duration? = nil) async throws
        -> Int
    {
        let nanoseconds = duration.nanosecondsRoundedDown
        let method = self.method("advance", argument: "by: \(formatDuration(duration))", limit: limit)
        return try await self.settle(method: method, limit: limit, movesClock: true) { now in
            Self.time(now, movedBy: nanoseconds)
        }
    }

    /// Moves the virtual clock forward to `time`, running the tasks that fall due and waiting for the tracked tasks
    /// to settle at each step: the async form of ``advance(to:)``; otherwise as ``advance(by:waitingUpTo:)``.
    ///
    /// - Parameters:
    ///   - time: The virtual time to move to, as ``now``.
    ///   - limit: Replaces ``waitLimit`` for this call only; leave it out (see [Limits](doc:Limits)).
    /// - Returns: The number of tasks run.
    /// - Throws: What ``advance(by:waitingUpTo:)`` throws.
    @discardableResult
    nonisolated(nonsending) public func advance(to time: Duration, waitingUpTo limit: Duration? = nil) async throws
        -> Int
    {
        let nanoseconds = time.nanosecondsRoundedDown
        let method = self.method("advance", argument: "to: \(formatDuration(time))", limit: limit)
        return try await self.settle(method: method, limit: limit, movesClock: true) { _ in nanoseconds }
    }

    /// Runs what is due now and waits for the tracked tasks to settle, without moving the clock.
    ///
    /// Use it to let async code reach its next wait, then check the state, before moving time:
    ///
    /// ```swift
    /// search.type("swift")                               // a tracked task that debounces for 300 ms
    /// try await dispatcher.settle()                      // it now sleeps on dispatcher.clock
    /// #expect(dispatcher.pendingTasks.count == 1)        // the sleep
    /// ```
    ///
    /// - Parameter limit: Replaces ``waitLimit`` for this call only; leave it out (see <doc:Limits>).
    /// - Returns: The number of tasks run.
    /// - Throws: What ``runUntilIdle(waitingUpTo:)`` throws.
    @discardableResult
    nonisolated(nonsending) public func settle(waitingUpTo limit: Duration? = nil) async throws -> Int {
        try await self.settle(method: self.method("settle", limit: limit), limit: limit, movesClock: true) { $0 }
    }

    /// `runUntilIdle()`, or `advance(by: 1 s, waitingUpTo: 200 ms)` when the call set its own limit: how messages
    /// name the call.
    func method(_ name: String, argument: String? = nil, limit: Duration?) -> String {
        let arguments = [argument, limit.map { "waitingUpTo: \(formatDuration($0))" }].compactMap {
            $0
        }
        return "\(name)(\(arguments.joined(separator: ", ")))"
    }

}
