import Dispatch
import TaskDispatch

/// Where a run method starts: what the drain bound and the runaway diagnosis measure from.
struct RunStart {
    var firstSequence: UInt64
    var pendingCount: Int
    /// The tracked tasks' ``TrackedTasks/wakeups`` when the run started.
    var wakeups: UInt64
    /// The clock's time when the run started, and the time it moves to (the start's time without a target).
    var startTime: Int64
    var target: Int64

    /// The most tasks a draining call may run: every task pending when it started plus `runawayLimit`.
    func bound(runawayLimit: Int) -> Int {
        let (sum, overflow) = self.pendingCount.addingReportingOverflow(runawayLimit)
        return overflow ? .max : sum
    }
}

extension Schedule {
    /// Releases the run, moving the clock to `time` first if given: an auto-drain may take the claim over.
    mutating func endRun(movingClockTo time: Int64?) -> Action {
        if let time { self.moveClock(to: time) }
        // On a release to an auto-drain, it goes on holding the claim.
        return self.release() ? .drain(Effects()) : .proceed(Effects(woken: self.wokenWaiters(), broadcast: true))
    }

    /// The failure of a synchronous drain that would move the clock on, or end as idle, while tracked tasks woken since
    /// the test last waited for tracked work (``TrackedTasks/awaitedWakeups``) may still run, woken by this run (since
    /// `start`) or earlier; `nil` if none was. It cannot wait for them, so the rule looks only at what calls did.
    func clockHeld(_ method: String, since start: RunStart) -> Failure? {
        let mark = self.tracked.awaitedWakeups
        guard self.tracked.wakeups != mark else { return nil }
        return self.failure(
            .clockMovedAfterWaking(
                method: method, byThisCall: self.tracked.wakeups != start.wakeups,
                tasks: self.tracked.woken(since: mark)))
    }

    /// The runaway failure of a drain at its bound while tasks can still run up to its target.
    mutating func runawayFailure(_ run: Run) -> Failure? {
        guard self.hasRunnableTask(jumpingClockTo: run.start.target) else { return nil }
        return self.failure(.runawayTasks(method: run.method, maxTasks: self.runawayLimit, ran: run.ran))
    }

    /// `scheduled` was just accepted, with `wait` if a tracked task awaits it: records the wait, wakes the waiters, lets
    /// auto-advance reach the task if the test dispatched it, and claims an auto-drain or the waiting drain's assist.
    mutating func accepted(
        _ scheduled: ScheduledTask,
        wait: OwnedWait?,
        of storage: Storage,
        awaited: Bool,
        awaitGoesOn: Bool
    ) -> (byTrackedTask: Bool, Action) {
        let byTrackedTask = wait.map { $0.scope.storage === storage } ?? false
        if let wait, awaitGoesOn { wait.recordBegin(in: &self, of: storage) }
        // The main-actor check only once a drain waits.
        if awaited, awaitGoesOn, byTrackedTask, !self.waitingSettles.isEmpty, MainActorExecution.isOnMainActor,
            self.claimForWaitingSettle(thread: currentThreadIdentity())
        {
            return (true, .assist)  // waiters are woken after the runs
        }
        let effects = Effects(woken: self.wokenWaiters())
        // In auto-advance, a dispatch from outside the tracked tasks lets the clock reach its task; a tracked task's,
        // or one of work it dispatched, only while the test waits (see `ClockHold`).
        if self.mode == .autoAdvance, scheduled.isPending {  // not one a cancelled scope refused
            if byTrackedTask || self.isExecutingTrackedWork(of: storage) || storage.trackedCaller != nil {
                self.clockHold.trackedWork.insert(scheduled.key.sequence)
            } else if scheduled.key.due > self.now {
                self.clockHold.allowJumps(to: scheduled)
                if awaited, scheduled.series != nil {
                    self.untrackedAwaitedTicks.removeAll { !$0.isPending }
                    self.untrackedAwaitedTicks.append(scheduled)
                }
            }
        }
        let drain = self.autoDrain && self.claimForAutoDrain(thread: currentThreadIdentity())
        return (byTrackedTask, drain ? .drain(effects) : .proceed(effects))
    }

    /// Whether the caller is the closure of the task a run of `storage` executes now, and that task is tracked work
    /// (``ClockHold/trackedWork``): a background one runs on the claim's thread, a foreground one on the main actor.
    private func isExecutingTrackedWork(of storage: Storage) -> Bool {
        guard let claim = self.claim, claim.executingTrackedWork, let context = claim.executing else { return false }
        guard context == .foreground else { return claim.thread == currentThreadIdentity() }
        guard MainActorExecution.isOnMainActor else { return false }
        return MainActor.assumeIsolated {
            ForegroundBody.running.contains { $0 == (ObjectIdentifier(storage), claim.executingSequence) }
        }
    }

    /// How the test's `value(of:)` of a tracked task goes on after its wait ended.
    enum ValueWaitEnd {
        /// The task finished: its value is ready.
        case finished
        /// Woken, but another call took the failure left for the next call first, and the task has not finished.
        case waitOn
        /// A failure was left for the next call (a runaway auto-advance stopped the clock), or the limit passed: throw
        /// this.
        case failed(Failure)
    }

    /// The test's `value(of:)` of tracked task `id` was woken, or reached `limit`: unless the task finished, the claim
    /// of `key` is given back with a failure left for the next call or (at the limit) the task's.
    mutating func valueWaitEnded(_ id: UInt64, key: TrackedTaskKey, timedOutAfter limit: Duration?) -> ValueWaitEnd {
        guard !self.tracked.hasFinished(id) else { return .finished }
        if let failure = self.takeDeferredFailure(by: "value(of:)") {
            self.tracked.unclaim(key)
            return .failed(failure)
        }
        // Not finished, so the task has a standing.
        guard let limit, let standing = self.tracked.standing(of: id) else { return .waitOn }
        self.tracked.unclaim(key)
        return .failed(
            self.failure(
                .taskNotFinished(limit: limit, task: standing, mode: self.mode, holding: self.tracked.unsettled)))
    }
}

// MARK: - Waits

extension Schedule {
    /// Whether waiter `id`'s `condition` holds now: at its registration, and at its time-out (a condition that came to
    /// hold as the timer fired ends the wait, not with an error). An untracked task's end recorded for it is taken.
    mutating func holds(_ condition: DispatchWaiters<WaitResumer>.Condition, for id: DispatchWaiters<WaitResumer>.ID)
        -> Bool
    {
        (condition == .untrackedTaskEnded && self.untrackedTasksEnded.remove(id) != nil)
            || condition.isMet(
                by: self.waitCounts(countingCancelled: condition == .cancelledTasksSettled),
                isFinished: self.tracked.hasFinished)
    }

    /// Registers waiter `id` unless `condition` holds already (then `resumer` is woken at once). The test's await of
    /// a tracked task ends a hold of the clock, and in auto-advance the caller, on `thread`, may now drain.
    mutating func register(
        _ id: DispatchWaiters<WaitResumer>.ID,
        until condition: DispatchWaiters<WaitResumer>.Condition,
        resumer: WaitResumer,
        deadline: DispatchTime,
        asTheTestsAwaitOfATask: Bool,
        thread: UInt
    ) -> Action {
        guard !self.holds(condition, for: id) else {
            if condition.awaitsTrackedWork { self.tracked.waitedForWokenTasks() }  // as in `wokenWaiters()`
            return .proceed(Effects(woken: [resumer]))
        }
        var effects = Effects(arm: self.waiters.add(id, waitingFor: condition, resumer: resumer, deadline: deadline))
        if let observer = self.waiters.registrationObserver { effects.setRare { $0.observe = observer } }
        guard asTheTestsAwaitOfATask else { return .proceed(effects) }
        self.clockHold.endHold()  // a hold after this wait is timed from its own start
        return self.autoAdvance(effects, thread: thread)
    }
}

// MARK: - Release, verifyIdle and hooks

extension Schedule {
    /// What a dispatcher leaves at its release.
    struct Leftovers {
        var snapshot: Snapshot?
        /// Reports of finished tracked tasks' uncounted tasks that no call took (``Schedule/trackedTaskFinished(_:error:)``);
        /// a runaway's failure was written to standard error as it stopped.
        var uncounted: [Failure] = []
        var errors: Failure?
        var awaits: Failure?
        var running: Failure?
        /// The pending tasks, cancelled once the snapshot lists them (the test can no longer run them), with their
        /// closures, to release outside the lock: one may hold the storage, through a tick's series or a handle.
        var cancelled: [(ScheduledTask, DispatchedTask.Work)] = []
    }

    /// What the dispatcher leaves at its release, for the report (`releasing`: the tracked task the release is on).
    mutating func leftovers(releasing: UInt64?, limit: Duration) -> Leftovers {
        // A tracked task does not keep its dispatcher alive, so one may still be running: with tasks pending, one that
        // waits on something else (the pending report lists the starts and waits of the others).
        let unfinished = self.tracked.unfinished(excluding: releasing)
        let running = self.pendingCount > 0 ? unfinished.filter { !$0.isSettled } : unfinished
        return Leftovers(  // the arguments in order: the tasks are cancelled once the snapshot lists them
            snapshot: self.pendingCount > 0 ? self.snapshot(recentRuns: 10) : nil,
            uncounted: self.takeLateUncountedTasksFailures(by: "The dispatcher's release"),
            errors: self.unobservedErrorsFailure(method: "The dispatcher's release"),
            awaits: self.cancelledAwaitsFailure(method: "The dispatcher's release", limit: limit),
            running: running.isEmpty ? nil : self.failure(.unfinishedTasks(tasks: running)),
            cancelled: self.allPendingTasks.compactMap { task in self.cancel(task).map { (task, $0) } }
        )
    }

    /// At the registry's check after the release: the tracked tasks left running, or an error they threw since.
    mutating func failureAfterRelease() -> Failure? {
        let unfinished = self.tracked.unfinished()
        guard unfinished.isEmpty else { return self.failure(.unfinishedTasks(tasks: unfinished)) }
        let method = "The check after the dispatcher's release"
        return self.takeLateUncountedTasksFailure(by: method) ?? self.unobservedErrorsFailure(method: method)
    }

    /// The sequence of the task another thread's run executes now, if `verifyIdle()` on `thread` can wait for it.
    func executingElsewhere(thread: UInt, onMainActor: Bool) -> UInt64? {
        guard let claim = self.claim, let context = claim.executing,
            self.caller(executing: context, thread: thread, onMainActor: onMainActor) == nil
        else { return nil }
        return claim.executingSequence
    }

    /// `verifyIdle()`'s failure, on `thread`, if it is not idle.
    mutating func idleFailure(thread: UInt, onMainActor: Bool, limit: Duration) -> Failure? {
        self.autoAdvanceJumps = 0
        if let failure = self.takeDeferredFailure(by: "verifyIdle()") { return failure }
        if let failure = self.unobservedErrorsFailure(method: "verifyIdle()") { return failure }
        if let failure = self.cancelledAwaitsFailure(method: "verifyIdle()", limit: limit) { return failure }
        let unfinished = self.tracked.unfinished()
        if self.pendingCount > 0 {
            return self.failure(.pendingTasks(unfinished: unfinished))
        }
        if let claim = self.claim, let task = self.executingTask {
            let caller =
                self.caller(executing: task.context, thread: thread, onMainActor: onMainActor)
                ?? .elsewhere(waited: limit)
            return self.failure(.taskStillRunning(task: task, runner: claim.method, caller: caller))
        }
        return unfinished.isEmpty ? nil : self.failure(.unfinishedTasks(tasks: unfinished))
    }

    /// Where a `verifyIdle()` caller on `thread` stands to the task of `context` that the run's claim is executing:
    /// inside it (on the claim's thread), or on the main actor it needs; `nil` elsewhere, where it can wait.
    private func caller(executing context: TaskContext, thread: UInt, onMainActor: Bool) -> IdleCheckCaller? {
        if self.claim?.thread == thread { return .insideTheTask }
        return onMainActor && context == .foreground ? .onTheMainActorItNeeds : nil
    }
}

// MARK: - Failures left for the next call

extension Schedule {
    /// Tracked task `id` finished, as ``TrackedTasks/finish(_:error:now:)`` says; one that finished before a drain
    /// reported its uncounted tasks leaves that report to the dispatcher's next call.
    mutating func trackedTaskFinished(_ id: UInt64, error: (any Error)?) {
        guard let late = self.tracked.finish(id, error: error, now: self.now) else { return }
        self.deferredFailures.append(self.failure(.uncountedTasks(method: "the dispatcher", task: late)))
    }

    /// The oldest failure left for the next call, taken by `method`, which a late report of uncounted tasks names.
    mutating func takeDeferredFailure(by method: String) -> Failure? {
        guard !self.deferredFailures.isEmpty else { return nil }
        return self.deferredFailures.removeFirst().delivered(by: method)
    }

    /// The oldest late report of uncounted tasks, taken by `method`: the test's `value(of:)` of a task that finished
    /// throws it rather than hand over a value whose times may be wrong.
    mutating func takeLateUncountedTasksFailure(by method: String) -> Failure? {
        guard let index = self.deferredFailures.firstIndex(where: \.isLateUncountedTasksReport) else { return nil }
        return self.deferredFailures.remove(at: index).delivered(by: method)
    }

    /// Every late report of uncounted tasks, taken by `method` (the release), oldest first.
    mutating func takeLateUncountedTasksFailures(by method: String) -> [Failure] {
        let late = self.deferredFailures.filter(\.isLateUncountedTasksReport).map { $0.delivered(by: method) }
        self.deferredFailures.removeAll(where: \.isLateUncountedTasksReport)
        return late
    }
}

extension Failure {
    /// Whether this reports a tracked task that finished with uncounted tasks (``Schedule/trackedTaskFinished(_:error:)``).
    var isLateUncountedTasksReport: Bool {
        if case .uncountedTasks(_, let task) = self.misuse { task.finishedAfterTheClockMoved } else { false }
    }

    /// This failure as `method` reports it: a late report names the call that delivers it.
    fileprivate func delivered(by method: String) -> Failure {
        guard case .uncountedTasks(_, let task) = self.misuse, task.finishedAfterTheClockMoved else { return self }
        var failure = self
        failure.misuse = .uncountedTasks(method: method, task: task)
        return failure
    }
}
