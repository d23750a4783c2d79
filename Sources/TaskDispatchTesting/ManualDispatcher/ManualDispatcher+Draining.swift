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
        var run = Run("runCurrent()", .current)
        try self.storage.run(&run)
        return run.ran
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
        var run = Run("runUntilIdle()", .drain)
        run.requiresSettled = true
        run.holdsClock = MainActorExecution.isOnMainActor
        try self.storage.run(&run)
        return run.ran
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
        var run = Run(method, .drain)
        run.movesClock = true
        run.holdsClock = MainActorExecution.isOnMainActor
        try self.storage.run(&run, target: target)
        return run.ran
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
        var run = Run("run(untilTaskLabeled: \"\(label)\")", .drain)
        run.pauses = true
        run.holdsClock = MainActorExecution.isOnMainActor
        var paused = try self.storage.run(&run)
        while paused {
            if let found = run.last, found.task.label == label {
                self.storage.endRun()
                return TaskRun(found, callSites: self.storage.callSites)
            }
            paused = try self.storage.resume(&run)
        }
        throw ManualDispatcherError(
            self.storage.failure {
                $0.failure(
                    .labelNotFound(method: run.method, label: label, ran: run.ran, unsettled: $0.tracked.unsettled))
            }.unsafelyUnwrapped)  // always a failure
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
        var run = Run("run(until:)", .drain)
        run.pauses = true
        run.holdsClock = MainActorExecution.isOnMainActor
        // Checked under the claim, before the first task and after each one: a run the condition makes is refused
        // the same way each time.
        var paused = try self.storage.run(&run)
        var satisfied = false
        while paused {
            satisfied = condition()
            if satisfied {
                self.storage.endRun()
                return run.ran
            }
            paused = try self.storage.resume(&run)
        }
        guard satisfied else {
            throw ManualDispatcherError(
                self.storage.failure {
                    $0.failure(.conditionNotMet(method: run.method, ran: run.ran, unsettled: $0.tracked.unsettled))
                }.unsafelyUnwrapped)
        }
        return run.ran
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
