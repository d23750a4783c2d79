import Dispatch
import TaskDispatch

extension ManualDispatcher {
    /// Runs every task, and waits for the tracked tasks to settle in between: the async form of
    /// ``runUntilIdle()``, which async code gets.
    ///
    /// ```swift
    /// @Test @MainActor func refreshLoadsTheFeed() async throws {
    ///     let dispatcher = ManualDispatcher()
    ///     let model = FeedModel(dispatcher: dispatcher)
    ///
    ///     model.refresh()                                // dispatcher.startTask { … }
    ///     try await dispatcher.runUntilIdle()
    ///     #expect(model.state == .loaded)                // the task has finished
    /// }
    /// ```
    ///
    /// A tracked task runs partly outside the dispatcher: after its start, and after each `await`, its code runs
    /// on its own executor (the main actor, or the global executor), concurrently with the test. So the call
    /// alternates two phases until both are done:
    ///
    /// 1. **Run** every task that is due, as ``runUntilIdle()`` does, on the calling thread.
    /// 2. **Wait** until every tracked task has *settled*, or a task falls due, suspended (no thread blocked, no
    ///    polling: the event itself resumes the call). A tracked task is settled when it has finished, or when it
    ///    is suspended on work the dispatcher owns: an awaitable dispatch of this dispatcher (`runInBackground`,
    ///    `runOnMainActor`) that has not run, a sleep on ``clock``, its own start, or ``value(of:)`` of another
    ///    tracked task that is settled.
    ///
    /// When nothing is due and every tracked task is settled, the clock jumps to the next delayed task (a sleep
    /// wakes this way too) and the two phases start again; when no delayed task is left, the call returns. Time
    /// moves only between settled states, so a task woken by a sleep has dispatched its next step before the
    /// clock moves past it.
    ///
    /// A tracked task that stays unsettled for the real-time limit awaits something the dispatcher does not
    /// control (a network call, another actor, `Task.sleep`, a continuation resumed by another thread, a task's
    /// `value` awaited without ``value(of:)``): the call throws ``ManualDispatcherError/Kind/unsettledTasks(after:)``
    /// naming each such task, its call site, and the last thing the dispatcher saw it do. What settling does not
    /// see is listed in <doc:TestingAsyncCode>.
    ///
    /// - Parameter limit: The longest real time to wait, each time, for the tracked tasks to settle or a task to
    ///   fall due; the dispatcher's ``waitLimit`` when `nil` (see <doc:Limits>).
    /// - Returns: The number of tasks run.
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/unsettledTasks(after:)``,
    ///   ``ManualDispatcherError/Kind/unobservedTaskError`` (an error a tracked task threw that nobody claimed),
    ///   ``ManualDispatcherError/Kind/runawayTasks(limit:)``, the errors of one run at a time
    ///   (``ManualDispatcherError/Kind/reentrantRun``, ``ManualDispatcherError/Kind/concurrentRun``); or
    ///   `CancellationError` when the calling task is cancelled while it waits.
    @discardableResult
    public func runUntilIdle(waitingUpTo limit: Duration? = nil) async throws -> Int {
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
    /// clock shows the target.
    ///
    /// - Parameters:
    ///   - duration: How far to move the clock; zero is ``settle(waitingUpTo:)``.
    ///   - limit: The longest real time to wait, each time; the dispatcher's ``waitLimit`` when `nil`.
    /// - Returns: The number of tasks run.
    /// - Throws: What ``runUntilIdle(waitingUpTo:)`` throws, and
    ///   ``ManualDispatcherError/Kind/clockMovedBackwards(from:to:)`` for a negative `duration`.
    @discardableResult
    public func advance(by duration: Duration, waitingUpTo limit: Duration? = nil) async throws -> Int {
        let nanoseconds = duration.nanosecondsSaturated
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
    ///   - limit: The longest real time to wait, each time; the dispatcher's ``waitLimit`` when `nil`.
    /// - Returns: The number of tasks run.
    /// - Throws: What ``advance(by:waitingUpTo:)`` throws.
    @discardableResult
    public func advance(to time: Duration, waitingUpTo limit: Duration? = nil) async throws -> Int {
        let nanoseconds = time.nanosecondsSaturated
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
    /// - Parameter limit: The longest real time to wait, each time; the dispatcher's ``waitLimit`` when `nil`.
    /// - Returns: The number of tasks run.
    /// - Throws: What ``runUntilIdle(waitingUpTo:)`` throws.
    @discardableResult
    public func settle(waitingUpTo limit: Duration? = nil) async throws -> Int {
        try await self.settle(method: self.method("settle", limit: limit), limit: limit, movesClock: true) { $0 }
    }

    /// The number of tracked tasks that are not settled; for the package's own tests (it changes as the tasks run
    /// on their own executors).
    package var unsettledTaskCount: Int {
        self.monitor.withLock { $0.tracked.unsettledCount }
    }

    /// `runUntilIdle()`, or `advance(by: 1 s, waitingUpTo: 200 ms)` when the call set its own limit: how messages
    /// name the call.
    func method(_ name: String, argument: String? = nil, limit: Duration?) -> String {
        let arguments = [argument, limit.map { "waitingUpTo: \(formatDuration($0))" }].compactMap {
            $0
        }
        return "\(name)(\(arguments.joined(separator: ", ")))"
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
        limit: Duration?,
        movesClock movesClockToTarget: Bool,
        target: (_ now: Int64) -> Int64
    ) async throws -> Int {
        let limit = limit ?? self.waitLimit
        let id = self.monitor.withLock { $0.waiters.makeID() }
        var targetTime: Int64 = 0
        let first = try self.claimRun(method) { schedule in
            targetTime = target(schedule.now)
            guard targetTime < schedule.now else { return nil }
            return schedule.failure(.clockMovedBackwards(method: method, from: schedule.now, to: targetTime))
        }
        let bound = self.bound(from: first)
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
