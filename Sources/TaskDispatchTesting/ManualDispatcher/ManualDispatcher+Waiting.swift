public import TaskDispatch

extension ManualDispatcher {
    // MARK: - Waiting without running

    /// Suspends until at least `count` tasks are pending in `context`, waiting up to the real-time limit.
    ///
    /// Use it to wait for code under test running in a Swift task to reach a point, then assert or step. The condition
    /// is a level, not an edge: tasks pending before the call count, as ``pendingTaskCount(in:)`` counts them. It runs
    /// nothing; another thread's run may consume tasks between the wake-up and the caller's next line. In auto-drain and
    /// auto-advance, a task dispatched from outside the tracked tasks may run inside its dispatch (auto-advance jumps
    /// to a delayed one), so it is never seen pending: wait for its effect instead, or use manual mode.
    ///
    /// - Parameters:
    ///   - count: How many pending tasks to wait for; 1 by default. Zero or less returns at once.
    ///   - context: The context to count, or `nil` (the default) to count both.
    ///   - limit: Replaces ``waitLimit`` for this call only; leave it out (see [Limits](doc:Limits)).
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/waitTimedOut(after:)`` when fewer tasks
    ///   were pending at the end of the limit, or one left for the next call (a runaway auto-advance's, or the report of
    ///   uncounted tasks in a tracked task that finished); `CancellationError` when the calling task is cancelled.
    nonisolated(nonsending) public func waitForPendingTasks(
        _ count: Int = 1,
        in context: TaskContext? = nil,
        waitingUpTo limit: Duration? = nil
    ) async throws {
        let place = context.map { ", in: .\($0)" } ?? ""
        let method = self.method("waitForPendingTasks", argument: "\(count)\(place)", limit: limit)
        let limit = limit ?? self.waitLimit
        let id = self.storage.update { $0.waiters.makeID() }
        let condition = DispatchWaiters<WaitResumer>.Condition.pendingTasks(atLeast: count, in: context)
        try await self.storage.wait(until: condition, id: id, deadline: limit.dispatchDeadline, reporting: method) {
            $0.failure(.pendingTasksNotReached(method: method, count: count, context: context, limit: limit))
        }
    }
}

/// How a suspended wait ended: the condition held (at registration or later), the deadline passed, or the waiting
/// task was cancelled.
enum WaitOutcome: Sendable {
    case conditionMet, timedOut, cancelled
}

/// A registered waiter's continuation, resumed once by whoever removes it, outside the lock.
typealias WaitResumer = CheckedContinuation<WaitOutcome, Never>

extension Schedule {
    /// The counts the waiters' conditions are checked against, with the unsettled cancelled tasks counted (in O(n)) only
    /// if `countingCancelled`, as a waiter for them needs; the rest are stored, or O(1) mostly
    /// (``TrackedTasks/unsettledCount``).
    func waitCounts(countingCancelled: Bool) -> DispatchWaiters<WaitResumer>.Counts {
        DispatchWaiters.Counts(
            dueForeground: self.dueForeground,
            dueBackground: self.dueBackground,
            delayedForeground: self.waitingForeground,
            delayedBackground: self.waitingBackground,
            unsettledTasks: self.tracked.unsettledCount,
            unsettledCancelledTasks: countingCancelled ? self.tracked.unsettledCancelledCount : 0,
            hasDeferredFailure: !self.deferredFailures.isEmpty,
            runClaimed: self.claim != nil
        )
    }

    /// After a change, removes the waiters it satisfies, for the caller to resume after unlocking; `nil` if none waits.
    mutating func wokenWaiters() -> [WaitResumer]? {
        guard !self.waiters.isEmpty else { return nil }
        let counts = self.waitCounts(countingCancelled: self.waiters.contains(waitingFor: .cancelledTasksSettled))
        let (woken, awaited) = self.waiters.resumersMet(by: counts, isFinished: self.tracked.hasFinished)
        if awaited { self.tracked.waitedForWokenTasks() }  // the test waited for their work (`awaitedWakeups`)
        return woken
    }

    /// The awaits from outside the tracked tasks that the wait limit `limit` ended since the last report, as one
    /// failure for `method` (`verifyIdle()`, the release); reported once.
    mutating func cancelledAwaitsFailure(method: String, limit: Duration) -> Failure? {
        guard !self.cancelledAwaits.isEmpty else { return nil }
        defer { self.cancelledAwaits.removeAll() }
        return self.failure(.awaitsCancelled(method: method, whats: self.cancelledAwaits, limit: limit))
    }

    /// The failure of `method`, whose wait of `limit` ended with `tasks` unsettled (since the clock moved to `since`);
    /// `nil` if they settled as the timer fired.
    func notSettled(_ method: String, limit: Duration, _ tasks: [TrackedTasks.UnsettledTask], since: Int64? = nil)
        -> Failure?
    {
        tasks.isEmpty ? nil : self.failure(.tasksNotSettled(method: method, limit: limit, tasks: tasks, since: since))
    }
}
