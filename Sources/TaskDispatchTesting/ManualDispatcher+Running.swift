import TaskDispatch

extension ManualDispatcher {
    // MARK: - Stepping

    /// Runs the oldest due foreground task, on the main actor.
    ///
    /// ```swift
    /// try dispatcher.runNextForeground()   // deliver the parsed items
    /// #expect(model.items.count == 3)
    /// ```
    ///
    /// - Returns: What ran.
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/noTaskToRun(_:)`` when no
    ///   foreground task is due (the message says what else is pending), or
    ///   ``ManualDispatcherError/Kind/reentrantRun`` when called from inside a task.
    /// - Complexity: O(1) amortized.
    @discardableResult
    public func runNextForeground() throws(ManualDispatcherError) -> TaskRun {
        try self._step("runNextForeground()", .foreground)
    }

    /// Runs the next due background task on the calling thread: the oldest one, or as ``order`` chooses.
    ///
    /// - Returns: What ran.
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/noTaskToRun(_:)`` when no
    ///   background task is due, or ``ManualDispatcherError/Kind/reentrantRun`` when called from a task.
    /// - Complexity: O(1) amortized in dispatch and priority order; O(n) in random order.
    @discardableResult
    public func runNextBackground() throws(ManualDispatcherError) -> TaskRun {
        try self._step("runNextBackground()", .background)
    }

    /// Runs the next due task of either context: the oldest by (due time, dispatch order), or as ``order``
    /// chooses.
    ///
    /// - Returns: What ran.
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/noTaskToRun(_:)`` when no
    ///   task is due, or ``ManualDispatcherError/Kind/reentrantRun`` when called from a task.
    /// - Complexity: O(1) amortized in dispatch and priority order; O(n) in random order.
    @discardableResult
    public func runNext() throws(ManualDispatcherError) -> TaskRun {
        try self._step("runNext()", .any)
    }

    private func _step(_ method: String, _ scope: _Scope) throws(ManualDispatcherError) -> TaskRun {
        try self._beginRun(method)
        let popped = self._state.withLock { state -> Result<(_Entry, Int64), ManualDispatcherError> in
            guard let entry = state.popNext(scope) else {
                let what =
                    switch scope {
                    case .foreground: "foreground task"
                    case .background: "background task"
                    case .any: "task"
                    }
                let context: TaskContext? =
                    switch scope {
                    case .foreground: .foreground
                    case .background: .background
                    case .any: nil
                    }
                return .failure(
                    state.makeError(
                        .noTaskToRun(context),
                        "\(method) found no \(what) due at \(_formatTime(state.now)); "
                            + state.describeOtherWork(besides: scope)
                    )
                )
            }
            state.activeRun?.executing = entry.context
            return .success((entry, state.now))
        }
        switch popped {
        case .failure(let error):
            self._endRun()
            throw error
        case .success(let (entry, startTime)):
            self._execute(entry)
            self._endRun()
            return TaskRun(task: entry.summary, startTime: .nanoseconds(startTime))
        }
    }

    // MARK: - Draining

    /// Runs the tasks that are due now and were pending when called, not those they dispatch.
    ///
    /// Use it to run one "turn" of work: everything the previous step queued, and nothing more.
    ///
    /// - Returns: The number of tasks that ran (zero is not an error).
    /// - Throws: ``ManualDispatcherError/Kind/reentrantRun`` when called from inside a task.
    /// - Complexity: O(k) for k tasks in dispatch and priority order.
    @discardableResult
    public func runCurrent() throws(ManualDispatcherError) -> Int {
        try self._beginRun("runCurrent()")
        defer { self._endRun() }
        let limit = self._state.withLock { $0.nextSequence }
        var ran = 0
        while let entry = self._popNext(.any, sequenceLimit: limit) {
            self._execute(entry)
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
    /// - Parameter maxTasks: The most tasks to run before giving up on a task that keeps rescheduling.
    /// - Returns: The number of tasks that ran.
    /// - Throws: ``ManualDispatcherError/Kind/runawayTasks(maxTasks:)`` naming the tasks that keep coming back
    ///   when more than `maxTasks` would run, or ``ManualDispatcherError/Kind/reentrantRun``.
    /// - Complexity: O(k) for k immediate tasks, O(k log n) when they are delayed.
    @discardableResult
    public func runUntilIdle(maxTasks: Int = ManualDispatcher.defaultMaxTasks) throws(ManualDispatcherError) -> Int {
        try self._drain("runUntilIdle(maxTasks: \(maxTasks))", maxTasks: maxTasks, clockLimit: .max)
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
    /// end it stands at the target time.
    ///
    /// - Parameters:
    ///   - duration: How far to move the clock; zero runs what is due now.
    ///   - maxTasks: The most tasks to run before giving up on a task that keeps rescheduling.
    /// - Returns: The number of tasks that ran.
    /// - Throws: ``ManualDispatcherError/Kind/clockMovedBackwards(from:to:)`` for a negative duration,
    ///   ``ManualDispatcherError/Kind/runawayTasks(maxTasks:)``, or ``ManualDispatcherError/Kind/reentrantRun``.
    @discardableResult
    public func advance(
        by duration: Duration,
        maxTasks: Int = ManualDispatcher.defaultMaxTasks
    ) throws(ManualDispatcherError) -> Int {
        let now = self._state.withLock { $0.now }
        let (target, overflow) = now.addingReportingOverflow(duration._nanoseconds)
        return try self._advance(
            method: "advance(by: \(duration))",
            to: overflow ? (duration < .zero ? .min : .max) : target,
            maxTasks: maxTasks
        )
    }

    /// Moves the virtual clock to `time`, running every task that falls due on the way.
    ///
    /// - Parameters:
    ///   - time: The new time, measured from the dispatcher's creation; not earlier than ``now``.
    ///   - maxTasks: The most tasks to run before giving up on a task that keeps rescheduling.
    /// - Returns: The number of tasks that ran.
    /// - Throws: ``ManualDispatcherError/Kind/clockMovedBackwards(from:to:)`` when `time` is before ``now``,
    ///   ``ManualDispatcherError/Kind/runawayTasks(maxTasks:)``, or ``ManualDispatcherError/Kind/reentrantRun``.
    @discardableResult
    public func advance(
        to time: Duration,
        maxTasks: Int = ManualDispatcher.defaultMaxTasks
    ) throws(ManualDispatcherError) -> Int {
        try self._advance(method: "advance(to: \(time))", to: time._nanoseconds, maxTasks: maxTasks)
    }

    private func _advance(method: String, to target: Int64, maxTasks: Int) throws(ManualDispatcherError) -> Int {
        let backwards = self._state.withLock { state -> ManualDispatcherError? in
            guard target >= state.now else {
                return state.makeError(
                    .clockMovedBackwards(from: .nanoseconds(state.now), to: .nanoseconds(target)),
                    "\(method) would move the clock backwards, from \(_formatTime(state.now)) to "
                        + "\(_formatTime(target)); virtual time only moves forward. Pass a later time, or a "
                        + "positive duration"
                )
            }
            return nil
        }
        if let backwards { throw backwards }
        let ran = try self._drain(method, maxTasks: maxTasks, clockLimit: target)
        self._state.withLock { state in
            state.now = Swift.max(state.now, target)
            state.promote(through: state.now)
        }
        return ran
    }

    /// Runs tasks, jumping the clock up to `clockLimit`, until none is left or `stop` says so.
    private func _drain(
        _ method: String,
        maxTasks: Int,
        clockLimit: Int64,
        stop: ((_Entry) -> Bool)? = nil
    ) throws(ManualDispatcherError) -> Int {
        try self._beginRun(method)
        defer { self._endRun() }
        var ran = 0
        while true {
            if ran >= maxTasks {
                guard self._hasMoreWork(jumpClockUntil: clockLimit) else { return ran }
                throw self._state.withLock { state in
                    state.makeError(
                        .runawayTasks(maxTasks: maxTasks),
                        "\(method) ran \(ran) tasks and tasks keep falling due; "
                            + Self._describeRunaway(state.historyArray, ran: ran)
                    )
                }
            }
            guard let entry = self._popNext(.any, jumpClockUntil: clockLimit) else { return ran }
            self._execute(entry)
            ran += 1
            if let stop, stop(entry) { return ran }
        }
    }

    // MARK: - Running until something happens

    /// Runs tasks, as ``runUntilIdle(maxTasks:)`` does, until a task labeled `label` has run.
    ///
    /// ```swift
    /// service.refresh()
    /// try dispatcher.run(untilTaskLabeled: "parse")
    /// #expect(service.parsedCount == 3)      // "deliver" has not run yet
    /// ```
    ///
    /// - Parameters:
    ///   - label: The label to wait for.
    ///   - maxTasks: The most tasks to run before giving up.
    /// - Returns: The run of the labeled task.
    /// - Throws: ``ManualDispatcherError/Kind/conditionNotMet`` when the tasks run out first,
    ///   ``ManualDispatcherError/Kind/runawayTasks(maxTasks:)``, or ``ManualDispatcherError/Kind/reentrantRun``.
    @discardableResult
    public func run(
        untilTaskLabeled label: String,
        maxTasks: Int = ManualDispatcher.defaultMaxTasks
    ) throws(ManualDispatcherError) -> TaskRun {
        let method = "run(untilTaskLabeled: \"\(label)\")"
        var found: _Entry?
        let ran = try self._drain(method, maxTasks: maxTasks, clockLimit: .max) { entry in
            guard entry.label == label else { return false }
            found = entry
            return true
        }
        if let found {
            let startTime = self.history.last { $0.sequence == found.sequence }?.startTime ?? self.now
            return TaskRun(task: found.summary, startTime: startTime)
        }
        throw self._state.withLock { state in
            state.makeError(
                .conditionNotMet,
                "\(method) ran \(_count(ran, "task")) and none was labeled \"\(label)\"; no task is pending "
                    + "any more. Check the label, and that the code under test dispatched that task"
            )
        }
    }

    /// Runs tasks, as ``runUntilIdle(maxTasks:)`` does, until `condition` holds.
    ///
    /// The condition is checked before each task, on the calling thread; it is not checked again once
    /// the tasks run out.
    ///
    /// ```swift
    /// try dispatcher.run(until: { service.retryCount == 2 })
    /// ```
    ///
    /// - Parameters:
    ///   - condition: The state to reach.
    ///   - maxTasks: The most tasks to run before giving up.
    /// - Returns: The number of tasks that ran.
    /// - Throws: ``ManualDispatcherError/Kind/conditionNotMet`` when the tasks run out first,
    ///   ``ManualDispatcherError/Kind/runawayTasks(maxTasks:)``, or ``ManualDispatcherError/Kind/reentrantRun``.
    @discardableResult
    public func run(
        until condition: () -> Bool,
        maxTasks: Int = ManualDispatcher.defaultMaxTasks
    ) throws(ManualDispatcherError) -> Int {
        let method = "run(until:)"
        if condition() { return 0 }
        return try withoutActuallyEscaping(condition) { condition throws(ManualDispatcherError) in
            var satisfied = false
            let ran = try self._drain(method, maxTasks: maxTasks, clockLimit: .max) { _ in
                satisfied = condition()
                return satisfied
            }
            guard satisfied else {
                throw self._state.withLock { state in
                    state.makeError(
                        .conditionNotMet,
                        "\(method) ran \(_count(ran, "task")) and the condition still does not hold; no task "
                            + "is pending any more. Check the condition, and what the tasks above did"
                    )
                }
            }
            return ran
        }
    }
}
