import Dispatch
public import TaskDispatch

extension ManualDispatcher {
    // MARK: - Waiting without running

    /// Suspends until at least `count` tasks are pending in `context`, waiting up to the real-time limit.
    ///
    /// Use it to wait for code under test running in a Swift task to reach a point, then assert or step. The condition
    /// is a level, not an edge: tasks pending before the call count, as ``pendingTaskCount(in:)`` counts them. It runs
    /// nothing; another thread's run may consume tasks between the wake-up and the caller's next line.
    ///
    /// - Parameters:
    ///   - count: How many pending tasks to wait for; 1 by default. Zero or less returns at once.
    ///   - context: The context to count, or `nil` (the default) to count both.
    ///   - limit: Replaces ``waitLimit`` for this call only; leave it out (see [Limits](doc:Limits)).
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/waitTimedOut(after:)`` when fewer tasks
    ///   were pending at the end of the limit; `CancellationError` when the calling task is cancelled.
    nonisolated(nonsending) public func waitForPendingTasks(
        _ count: Int = 1,
        in context: TaskContext? = nil,
        waitingUpTo limit: Duration? = nil
    ) async throws {
        let place = context.map { ", in: .\($0)" } ?? ""
        let method = self.method("waitForPendingTasks", argument: "\(count)\(place)", limit: limit)
        let limit = limit ?? self.waitLimit
        let id = self.monitor.withLock { $0.waiters.makeID() }
        switch await self.suspend(until: .pendingTasks(atLeast: count, in: context), id: id, limit: limit) {
        case .conditionMet:
            return
        case .cancelled:
            throw CancellationError()
        case .timedOut:
            let failure = self.monitor.withLock { schedule in
                schedule.failure(
                    .pendingTasksNotReached(method: method, count: count, context: context, limit: limit)
                )
            }
            throw ManualDispatcherError(failure)
        }
    }

    // MARK: - Machinery

    nonisolated(nonsending) func suspend(
        until condition: DispatchWaiters<WaitResumer>.Condition,
        id: DispatchWaiters<WaitResumer>.ID,
        limit: Duration
    ) async -> WaitOutcome {
        await self.suspend(until: condition, id: id, deadline: Self.deadline(after: limit))
    }

    /// Suspends until `condition` holds, `deadline` passes or the calling task is cancelled (see
    /// ``Monitor/suspend(until:id:deadline:asTheTestsAwaitOfATask:isolation:)``). A wait for a tracked task to finish
    /// is the test's `value(of:)`: in auto-advance, a jump of the clock that was held for it (see `ClockHold`) is
    /// made now.
    func suspend(
        until condition: DispatchWaiters<WaitResumer>.Condition,
        id: DispatchWaiters<WaitResumer>.ID,
        deadline: DispatchTime,
        isolation: isolated (any Actor)? = #isolation
    ) async -> WaitOutcome {
        await self.monitor.suspend(
            until: condition, id: id, deadline: deadline, asTheTestsAwaitOfATask: condition.isTrackedTaskFinished,
            isolation: isolation)
    }

    // MARK: - Awaits from outside the tracked tasks

    /// Bounds an await of `task` by code that is not one of this dispatcher's tracked tasks (`runInBackground`,
    /// `runOnMainActor` or a sleep on ``clock``, called from the test itself, from a plain `Task`, or from a task
    /// another dispatcher tracks): no drain of this dispatcher waits for such code, and a test
    /// that awaits the work itself cannot also step it. If `task` has neither run nor been cancelled ``waitLimit``
    /// after its dispatch, this cancels it and ends the await with ``ManualDispatcherError/Kind/waitTimedOut(after:)``,
    /// naming `what` was awaited; so the await ends within the limit, and the task is not lost: it is cancelled and
    /// reported, to the awaiting code and again by ``verifyIdle()`` and the release report, since code in a plain
    /// `Task` may swallow the error.
    ///
    /// No timer is set for a task that has already run (auto-drain runs it inside the dispatch), and the timer holds
    /// nothing strongly: a task that ran, or a dispatcher that is gone, leaves it nothing to do.
    func bound(_ awaiting: any TaskAwaiter, of task: ScheduledTask, describedAs what: String) {
        // A task that auto-drain ran inside the dispatch needs no timer: most awaits in that mode.
        guard self.monitor.withLock({ _ in task.isPending }) else { return }
        let limit = self.waitLimit
        DispatchQueue.global().asyncAfter(deadline: Self.deadline(after: limit)) {
            [weak monitor = self.monitor, weak task, weak awaiting] in
            guard let monitor, let task, let awaiting else { return }
            let stopped = monitor.withLock { schedule -> (work: DispatchedTask.Work, failure: Failure)? in
                // Another task of the same await (a decorator's note of the call's site) whose timer fired first has
                // ended it: this one stays pending, and verifyIdle() reports it.
                guard awaiting.mayFail else { return nil }
                let delayed = task.key.due > schedule.now
                guard let work = schedule.cancel(task) else { return nil }  // it started, or was cancelled
                awaiting.claimFailure()  // in this critical section: a later timer of the await sees it
                // Reported again by verifyIdle() and the release, in case the awaiting code swallows the error.
                schedule.cancelledAwaits.append(what)
                let misuse = Failure.Misuse.awaitNotRun(what: what, limit: limit, mode: schedule.mode, delayed: delayed)
                return (work, schedule.failure(misuse))
            }
            guard let stopped else { return }
            // The closure is released outside the lock, before the await resumes.
            awaiting.fail(with: ManualDispatcherError(stopped.failure), releasing: stopped.work)
        }
    }

    /// `limit` from now as a Dispatch deadline; zero or negative is now, 31 years or more is forever (see
    /// `Duration.dispatchDeadline`, which works in whole seconds so that a 32-bit `Int` holds them).
    static func deadline(after limit: Duration) -> DispatchTime {
        limit.dispatchDeadline
    }
}

/// How a suspended wait ended.
enum WaitOutcome: Sendable {
    /// A dispatch met the condition, or it held when the waiter came to register.
    case conditionMet
    /// The real-time limit passed first.
    case timedOut
    /// The waiting task was cancelled.
    case cancelled
}

/// What a registered waiter is resumed through: its continuation.
///
/// Its timer is not cancelled when a dispatch or a cancellation resumes it first: when it fires, it finds the
/// waiter gone and does nothing.
struct WaitResumer: Sendable {
    private let continuation: CheckedContinuation<WaitOutcome, Never>

    init(_ continuation: CheckedContinuation<WaitOutcome, Never>) {
        self.continuation = continuation
    }

    /// Resumes the waiting task. Call once, after removing the waiter, outside the lock.
    func resume(_ outcome: WaitOutcome) {
        self.continuation.resume(returning: outcome)
    }

    /// Resumes every waiter a dispatch woke.
    static func resumeAll(_ resumers: [WaitResumer]) {
        for resumer in resumers {
            resumer.resume(.conditionMet)
        }
    }
}

extension Schedule {
    /// The counts the waiters' conditions are checked against.
    ///
    /// - Complexity: O(n) in the tracked tasks that have not finished (plus the chains of `value(of:)` awaits):
    ///   ``TrackedTasks/unsettledCounts`` are derived from their records; the other counts are stored.
    var waitCounts: DispatchWaiters<WaitResumer>.Counts {
        let unsettled = self.tracked.unsettledCounts
        return DispatchWaiters.Counts(
            dueForeground: self.dueForeground,
            dueBackground: self.dueBackground,
            delayedForeground: self.waitingForeground,
            delayedBackground: self.waitingBackground,
            unsettledTasks: unsettled.all,
            unsettledCancelledTasks: unsettled.cancelled,
            hasDeferredFailure: self.deferredFailure != nil,
            runClaimed: self.claim != nil
        )
    }

    /// A task was just accepted: removes the waiters it satisfies, for the dispatch to resume after unlocking.
    mutating func waitersToWake() -> [WaitResumer] {
        self.waiters.dispatchHappened(self.waitCounts, isFinished: self.tracked.hasFinished)
    }

    /// The schedule changed (a dispatch, a run, a release, a tracked task's step): removes the waiters the change
    /// satisfies, for the caller to resume after unlocking; `nil` at the cost of one check when nobody waits.
    mutating func wokenWaiters() -> [WaitResumer]? {
        self.waiters.isEmpty ? nil : self.waitersToWake()
    }
}

extension Schedule {
    /// The awaits from outside the tracked tasks that the wait limit `limit` ended since the last report, as one
    /// failure for `method` (`verifyIdle()`, the release); reported once.
    mutating func cancelledAwaitsFailure(method: String, limit: Duration) -> Failure? {
        guard !self.cancelledAwaits.isEmpty else { return nil }
        defer { self.cancelledAwaits.removeAll() }
        return self.failure(.awaitsCancelled(method: method, whats: self.cancelledAwaits, limit: limit))
    }
}

extension Monitor where Value == Schedule {
    /// Sets the one timer that bounds the waits (see `DispatchWaiters.timerDeadline`) for `deadline`, as
    /// `DispatchWaiters.add` asks, and the next one when it fires. It holds the schedule weakly: a wait that ended
    /// keeps nothing alive until the deadline.
    func setWaitTimer(for deadline: DispatchTime) {
        DispatchQueue.global().asyncAfter(deadline: deadline) { [weak self] in
            guard let self else { return }
            let (expired, next) = self.withLock { $0.waiters.timerFired(for: deadline, now: .now()) }
            for resumer in expired { resumer.resume(.timedOut) }
            if let next { self.setWaitTimer(for: next) }
        }
    }

    /// Waits until every tracked task that was cancelled and has not finished has finished (a loop cancelled as its
    /// owner went away ends on its own, without a step of the test), within `limit` of real time, unless the
    /// calling task is cancelled. Works on the schedule alone, so the end-of-test check can wait this way for the
    /// tasks of a dispatcher that was released too.
    ///
    /// It runs nothing itself: a cancelled task that waits for a step of the test (a cancelled task that ignores its
    /// cancellation and awaits a pending dispatch) is still running when the limit passes, and the check that
    /// follows reports it.
    func awaitCancelledTrackedTasks(within limit: Duration) async {
        let deadline = ManualDispatcher.deadline(after: limit)
        while let (id, waiter) = self.withLock({ schedule -> (UInt64, DispatchWaiters<WaitResumer>.ID)? in
            guard let id = schedule.tracked.firstCancelledUnfinished else { return nil }
            return (id, schedule.waiters.makeID())
        }) {
            let outcome = await self.suspend(
                until: .trackedTaskFinished(id), id: waiter, deadline: deadline, asTheTestsAwaitOfATask: false)
            guard outcome == .conditionMet,
                self.withLock({ $0.tracked.hasFinished(id) })
            else { return }  // timed out, cancelled, or a runaway auto-advance stopped the clock: the check reports
        }
    }

    /// Suspends until `condition` holds, `deadline` passes or the calling task is cancelled, bounded by the
    /// schedule's one wait timer (which works without the dispatcher, which may be gone).
    ///
    /// The condition is checked and the waiter registered in one critical section, the one a dispatch takes
    /// to record its task, so a dispatch is either seen by the check or wakes the waiter. Whoever removes the
    /// waiter (a dispatch, the timer, the cancellation handler, or this method when the task was cancelled
    /// before it registered) resumes it, exactly once.
    ///
    /// - Parameters:
    ///   - condition: What the waiter waits for.
    ///   - id: The waiter's identity, which the cancellation handler removes it by.
    ///   - deadline: When the wait ends at the latest.
    ///   - asTheTestsAwaitOfATask: Whether the test now waits for a tracked task (`value(of:)`): in auto-advance, a
    ///     jump of the clock that was held for it (see `ClockHold`) is made now.
    ///   - isolation: The caller's isolation, where it resumes.
    /// - Returns: How the wait ended.
    func suspend(
        until condition: DispatchWaiters<WaitResumer>.Condition,
        id: DispatchWaiters<WaitResumer>.ID,
        deadline: DispatchTime,
        asTheTestsAwaitOfATask: Bool,
        isolation: isolated (any Actor)? = #isolation
    ) async -> WaitOutcome {
        await withTaskCancellationHandler {
            _ = isolation  // names the isolation, so the closure keeps it: the caller resumes without a hop
            return await withCheckedContinuation { (continuation: CheckedContinuation<WaitOutcome, Never>) in
                let thread = currentThreadIdentity()
                let registration = self.withLock { schedule -> WaitRegistration in
                    guard !condition.isMet(by: schedule.waitCounts, isFinished: schedule.tracked.hasFinished)
                    else { return .conditionAlreadyMet }
                    let timer = schedule.waiters.add(
                        id, waitingFor: condition, resumer: WaitResumer(continuation), deadline: deadline)
                    var drain = false
                    if asTheTestsAwaitOfATask {
                        schedule.clockHold.endHold()  // a hold after this wait is timed from its own start
                        drain = schedule.mode == .autoAdvance && schedule.claimForAutoDrain(thread: thread)
                    }
                    return .registered(observer: schedule.waiters.registrationObserver, timer: timer, drain: drain)
                }
                guard case .registered(let observer, let timer, let drain) = registration else {
                    continuation.resume(returning: .conditionMet)
                    return
                }
                if let timer { self.setWaitTimer(for: timer) }
                if drain { self.drainAutomatically() }
                // The cancellation handler runs at once if the task was cancelled before it was installed, or
                // concurrently with this closure: one of the two sees the waiter registered.
                if Task.isCancelled {
                    self.withLock { $0.waiters.remove(id) }?.resume(.cancelled)
                    return
                }
                // The test's seam runs as the test would, from outside the tracked task: a run method is refused inside it.
                if let observer { TaskTracking.$scope.withValue(nil) { observer() } }
            }
        } onCancel: {
            self.withLock { $0.waiters.remove(id) }?.resume(.cancelled)
        }
    }
}

/// Whether a wait registered (with the package's tests' observer of registrations, the timer to set, and whether
/// the caller drains in auto-advance), or found its condition already met.
private enum WaitRegistration {
    case conditionAlreadyMet
    case registered(observer: (@Sendable () -> Void)?, timer: DispatchTime?, drain: Bool)
}
