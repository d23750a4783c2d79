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
        try self.drain("runCurrent()", .current)
    }

    /// Runs tasks until none is pending, including the tasks they dispatch, moving the clock to each delayed
    /// task as it becomes the next one.
    ///
    /// The synchronous form; async code gets ``runUntilIdle(waitingUpTo:)``, which also waits for tracked tasks.
    /// Tasks whose delay reaches past the clock's range stay pending. It neither moves the clock past, nor ends on the
    /// state of, a tracked task woken as ``advance(by:)`` says.
    ///
    /// - Returns: The number of tasks that ran.
    /// - Throws: ``ManualDispatcherError/Kind/runawayTasks(limit:)`` when a task keeps rescheduling itself;
    ///   ``ManualDispatcherError/Kind/unsettledTasks(after:)`` when tracked tasks still run at the end, or as above;
    ///   or ``ManualDispatcherError/Kind/reentrantRun``.
    /// - Complexity: O(k) for k immediate tasks, O(k log n) when they are delayed.
    @discardableResult
    public func runUntilIdle() throws(ManualDispatcherError) -> Int {
        try self.drain("runUntilIdle()", requiresSettled: true)
    }

    /// Moves the virtual clock forward by `duration`, running every task that falls due on the way or at the target,
    /// by due time (and among tasks due at one instant, as ``order`` chooses), including tasks those tasks schedule
    /// inside the window.
    ///
    /// The clock ends at the target (or at the end of its range, about 292 years). Async code gets
    /// ``advance(by:waitingUpTo:)``. A synchronous step never moves the clock past a tracked task that it, or an
    /// earlier synchronous call, woke and that no async drain has waited for since: it cannot wait for the task, so it
    /// throws, naming the async form (<doc:TestingAsyncCode#Run-until-idle>). On the main actor it also refuses to
    /// start while a main-actor tracked task waits to run.
    ///
    /// - Parameter duration: How far to move the clock; zero runs what is due now.
    /// - Returns: The number of tasks that ran.
    /// - Throws: ``ManualDispatcherError/Kind/clockMovedBackwards(from:to:)`` for a negative duration,
    ///   ``ManualDispatcherError/Kind/unsettledTasks(after:)`` as above,
    ///   ``ManualDispatcherError/Kind/runawayTasks(limit:)``, or ``ManualDispatcherError/Kind/reentrantRun``.
    @discardableResult
    public func advance(by duration: Duration) throws(ManualDispatcherError) -> Int {
        try self.drain("advance(by: \(formatDuration(duration)))", movesClock: true) {
            [nanoseconds = duration.nanosecondsRoundedDown] in Self.time($0, movedBy: nanoseconds)
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
        try self.drain("advance(to: \(formatDuration(time)))", movesClock: true) {
            [nanoseconds = time.nanosecondsRoundedDown] _ in nanoseconds
        }
    }

    /// Runs the synchronous `method` of `kind` to its end, holding the clock once it wakes a tracked task (see
    /// ``advance(by:)``).
    private func drain(
        _ method: String,
        _ kind: Run.Kind = .drain,
        requiresSettled: Bool = false,
        movesClock: Bool = false,
        target: (_ now: Int64) -> Int64 = { _ in TaskKey.latestTime }
    ) throws(ManualDispatcherError) -> Int {
        var run = Run(method, kind)
        run.requiresSettled = requiresSettled
        run.movesClock = movesClock
        try self.storage.run(&run, target: target)
        return run.ran
    }

    /// `now` moved by `nanoseconds`, saturating at the ends of `Int64` instead of overflowing.
    static func time(_ now: Int64, movedBy nanoseconds: Int64) -> Int64 {
        if nanoseconds == .min { return .min }  // a move past the clock's range (saturated) stays past it
        let (target, overflow) = now.addingReportingOverflow(nanoseconds)
        return overflow ? (nanoseconds < 0 ? .min : .max) : target
    }

    // MARK: - Running until something happens

    /// Runs tasks, as ``runUntilIdle()`` does, until a task labeled `label` has run.
    ///
    /// - Parameter label: The label to wait for.
    /// - Returns: The run of the labeled task.
    /// - Throws: ``ManualDispatcherError/Kind/conditionNotMet`` when the tasks run out first, or before it would move
    ///   the clock while tracked tasks woken as ``advance(by:)`` says may still dispatch;
    ///   ``ManualDispatcherError/Kind/runawayTasks(limit:)``, or ``ManualDispatcherError/Kind/reentrantRun``.
    @discardableResult
    public func run(untilTaskLabeled label: String) throws(ManualDispatcherError) -> TaskRun {
        let run = try self.runPausing("run(untilTaskLabeled: \"\(label)\")", label: label) { $0?.task.label == label }
        // It stopped at the label.
        return TaskRun(run.last.unsafelyUnwrapped, callSites: self.storage.read { $0.callSites.sites })
    }

    /// Runs tasks, as ``runUntilIdle()`` does, until `condition` holds.
    ///
    /// The condition is checked before the first task and after each, on the calling thread, inside the run (a run
    /// method called from it throws ``ManualDispatcherError/Kind/reentrantRun``). When the tasks run out, the call
    /// returns if the last check held.
    ///
    /// - Parameter condition: The state to reach.
    /// - Returns: The number of tasks that ran.
    /// - Throws: ``ManualDispatcherError/Kind/conditionNotMet`` when the tasks run out first, or before it would move
    ///   the clock while tracked tasks woken as ``advance(by:)`` says may still dispatch;
    ///   ``ManualDispatcherError/Kind/runawayTasks(limit:)``, or ``ManualDispatcherError/Kind/reentrantRun``.
    @discardableResult
    public func run(until condition: () -> Bool) throws(ManualDispatcherError) -> Int {
        try self.runPausing("run(until:)", label: nil) { _ in condition() }.ran
    }

    /// Runs tasks as ``runUntilIdle()`` does until `stop`, given the last task run, holds (checked under the claim,
    /// before the first task and after each); when the tasks run out first, throws `conditionNotMet` for `label`.
    private func runPausing(_ method: String, label: String?, until stop: (_ last: RunRecord?) -> Bool)
        throws(ManualDispatcherError) -> Run
    {
        var run = Run(method, .drain)
        run.pauses = true
        var paused = try self.storage.run(&run)
        while paused, !stop(run.last) { paused = try self.storage.resume(&run) }
        if paused {
            self.storage.send(.runEnded)
            return run
        }
        let failure = self.storage.read {
            $0.failure(
                .conditionNotMet(
                    method: method, label: label, ran: run.ran, unsettled: $0.tracked.unsettled,
                    beforeTheClock: run.stoppedBeforeTheClock))
        }
        throw ManualDispatcherError(failure)
    }

    // MARK: - Async drains, which wait for tracked tasks to settle

    /// Runs every task, and waits for the tracked tasks to settle in between: the async form of ``runUntilIdle()``.
    ///
    /// It runs what is due, waits until every tracked task has *settled* (finished, or suspended on work the dispatcher
    /// owns), moves the clock to the next delayed task, and repeats until nothing is left. A tracked task that does not
    /// settle is named in the error. See <doc:TestingAsyncCode#Run-until-idle>.
    ///
    /// - Parameter limit: Replaces ``waitLimit`` for this call only; leave it out (see <doc:Limits>).
    /// - Returns: The number of tasks run.
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/unsettledTasks(after:)``,
    ///   ``ManualDispatcherError/Kind/unobservedTaskError``, ``ManualDispatcherError/Kind/runawayTasks(limit:)``,
    ///   ``ManualDispatcherError/Kind/reentrantRun`` or ``ManualDispatcherError/Kind/concurrentRun``;
    ///   `CancellationError` when the calling task is cancelled while it waits.
    @discardableResult
    nonisolated(nonsending) public func runUntilIdle(waitingUpTo limit: Duration? = nil) async throws -> Int {
        try await self.settle("runUntilIdle", limit: limit, movesClock: false) { _ in TaskKey.latestTime }
    }

    /// Moves the virtual clock forward by `duration`, running the tasks that fall due and waiting for the tracked
    /// tasks to settle at each step: the async form of ``advance(by:)``.
    ///
    /// A call that throws leaves the clock where it stopped. A tracked task that throws on the way is reported here
    /// unless the test awaits it with ``value(of:)-(Task<Success,Error>)``; to expect that error, let
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
        try await self.settle("advance", "by: \(formatDuration(duration))", limit: limit, movesClock: true) {
            [nanoseconds = duration.nanosecondsRoundedDown] in Self.time($0, movedBy: nanoseconds)
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
        try await self.settle("advance", "to: \(formatDuration(time))", limit: limit, movesClock: true) {
            [nanoseconds = time.nanosecondsRoundedDown] _ in nanoseconds
        }
    }

    /// Runs what is due now and waits for the tracked tasks to settle, without moving the clock: lets async code
    /// reach its next wait, so the test can check the state before it moves time.
    ///
    /// - Parameter limit: Replaces ``waitLimit`` for this call only; leave it out (see <doc:Limits>).
    /// - Returns: The number of tasks run.
    /// - Throws: What ``runUntilIdle(waitingUpTo:)`` throws.
    @discardableResult
    nonisolated(nonsending) public func settle(waitingUpTo limit: Duration? = nil) async throws -> Int {
        try await self.settle("settle", limit: limit, movesClock: true) { $0 }
    }

    /// The call as messages name it: `runUntilIdle()`, or `advance(by: 1 s, waitingUpTo: 200 ms)` with its own limit.
    func method(_ name: String, argument: String? = nil, limit: Duration?) -> String {
        let arguments = [argument, limit.map { "waitingUpTo: \(formatDuration($0))" }].compactMap { $0 }
        return "\(name)(\(arguments.joined(separator: ", ")))"
    }

}
