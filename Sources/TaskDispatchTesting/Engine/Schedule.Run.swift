import TaskDispatch

/// One call of a run method, as the one drain loop (``Schedule/next(_:)``) sees it: what it runs, how it ends, and
/// how far it got.
struct Run {
    enum Kind {
        /// One task of the scope (`runNext…()`); none due is a failure, or for an async step (`waits`) a pause.
        case step(Schedule.Scope, waits: Bool = false)
        /// The tasks due now that were pending at the start (`runCurrent()`).
        case current
        /// Every task up to the target, jumping the clock, within the runaway bound (`runUntilIdle()`, `advance`).
        case drain
        /// An async drain's pass: runs what is due, else pauses until the tracked tasks settle, then jumps the clock.
        case settle
        /// Auto-drain and auto-advance: a runaway is kept for the next run method, and written to standard error.
        case autoDrain
        /// The due tasks of the one waiting async drain, in a tracked task's awaited dispatch (see `WaitingSettles`).
        case assist
    }

    let method: String
    let kind: Kind
    /// Stops before the first task and after each one, for the caller's condition (`run(until…)`).
    var pauses = false
    /// Fails at the end while tracked tasks have not settled (`runUntilIdle()`).
    var requiresSettled = false
    /// Moves the clock to the target at the end (`advance`).
    var movesClock = false
    /// A synchronous call, which cannot wait for a tracked task it wakes: the clock does not move once the run has
    /// woken one (see ``Schedule/clockHeld(_:since:)``).
    var holdsClock = false
    /// A synchronous call on the main actor, which main-actor tracked tasks need to run.
    var blocksMainActor = false
    /// Whether the run has claimed once: an async run that paused to wait claims again, keeping its start.
    var began = false
    var start = RunStart(firstSequence: 0, pendingCount: 0, wakeups: 0, startTime: 0, target: 0)
    var isClaimed = false
    /// How many tasks ran, and the last one (kept only where it is returned: a step's one task, a pausing run's).
    var ran = 0
    var last: RunRecord?
    /// Whether a task ran since the last pause.
    var justRan = false
    /// Whether a synchronous pausing run ended for tracked tasks woken and not waited for (see ``Schedule/next(_:)``).
    var stoppedBeforeTheClock = false
    /// The call sites, for a step's ``ManualDispatcher/TaskRun``.
    var callSites: [CallSite] = []

    init(_ method: String, _ kind: Kind) {
        self.method = method
        self.kind = kind
    }
}

extension Schedule {
    /// Claims the run for `run` (`nil`: another thread holds it, wait), then takes its first step in the same section
    /// unless it pauses first. A refusal is a `.fail` without the claim.
    mutating func begin(
        _ run: inout Run,
        thread: UInt,
        reporting errors: TrackedTasks.ErrorsToReport = .all,
        target: (_ now: Int64) -> Int64
    ) -> Action? {
        let again = run.began  // a claim after a pause keeps the start and target, and reports no errors
        switch self.claim(
            run.method, thread: thread, blocksMainActor: run.blocksMainActor, reporting: again ? .none : errors,
            target: { again ? $0 : target($0) }, holdsMainActor: run.blocksMainActor && run.movesClock)
        {
        case .mustWait: return nil
        case .refused(let failure): return .fail(failure)
        case .claimed(let start):
            if !again { run.start = start }
            run.began = true
            run.isClaimed = true
            return run.pauses ? .paused : self.next(&run)
        }
    }

    /// The one stop rule of a run: ends the previous task, then pauses, runs the next task, or finishes. A failure
    /// leaves the claim to the caller to release.
    mutating func next(_ run: inout Run) -> Action {
        self.endExecution()
        if run.justRan && run.pauses {
            run.justRan = false
            return .paused
        }
        let step: Step?
        switch run.kind {
        case .step(let scope, let waits):
            guard run.ran == 0 else {
                run.callSites = self.callSites.sites
                return self.finish(&run)
            }
            step = self.next(in: scope, jumpingClockTo: nil)
            if step == nil {  // an async step waits for one
                return waits ? .paused : .fail(self.failure(.noTaskToRun(method: run.method, scope: scope)))
            }
        case .current:
            step = self.next(in: .any, jumpingClockTo: nil, before: run.start.firstSequence)
        case .drain, .settle:
            // Past its bound with nothing left to run up to its target, a drain finishes (no step below).
            let target = run.start.target
            if run.ran >= run.start.bound(runawayLimit: self.runawayLimit), let runaway = self.runawayFailure(run) {
                return .fail(runaway)
            }
            if !self.hasDueTask {  // the next task needs the clock to move
                // A synchronous drain to a condition cannot wait for woken tasks to dispatch what it looks for: it ends
                // here, the same way whether they have done so or not (`conditionNotMet`).
                if run.holdsClock, run.pauses, self.tracked.wakeups != self.tracked.awaitedWakeups {
                    run.stoppedBeforeTheClock = true
                    return self.finish(&run)
                }
                if case .settle = run.kind {
                    // The caller releases the claim and waits for the tasks to settle; the records say settled, but
                    // for uncounted child tasks they cannot know.
                    if self.tracked.unsettledCount > 0 { return .paused }
                    if let uncounted = self.uncountedTasksFailure(method: run.method) { return .fail(uncounted) }
                    self.tracked.waitedForWokenTasks()
                } else if run.holdsClock, self.hasRunnableTask(jumpingClockTo: target),
                    let failure = self.clockHeld(run.method, since: run.start)
                {
                    return .fail(failure)
                }
                if let series = self.liveSeriesFailure(run, target: target) {
                    return .fail(series)
                }
            }
            step = self.next(in: .any, jumpingClockTo: target)
        case .autoDrain:
            if run.ran >= self.runawayLimit && self.hasDueTask {
                return self.autoDrainRunaway(self.failure(.autoDrainRunaway(ran: run.ran, jumps: nil)))
            }
            let advances = !self.hasDueTask && self.canAutoAdvance()
            if advances {
                if let failure = self.uncountedTasksFailure(method: "auto-advance") {
                    return self.autoDrainRunaway(failure)
                }
                guard self.autoAdvanceJumps < self.runawayLimit else {
                    if let tick = self.seriesTickBlockingIdle(onlySeriesLeft: true) {
                        let limit = self.runawayLimit
                        return self.autoDrainRunaway(
                            self.failure(.liveSeries(method: "auto-advance", tick: tick, limit: limit)))
                    }
                    let jumps = self.autoAdvanceJumps
                    return self.autoDrainRunaway(self.failure(.autoDrainRunaway(ran: run.ran, jumps: jumps)))
                }
                self.autoAdvanceJumps += 1
            }
            step = self.next(in: .any, jumpingClockTo: advances ? TaskKey.latestTime : nil)
            if step == nil {
                self.claim = nil
                return .proceed(Effects(woken: self.wokenWaiters(), broadcast: true))
            }
        case .assist:
            guard let (id, _) = self.waitingSettles.assisted else { return self.finish(&run) }
            step = self.next(in: .any, jumpingClockTo: nil)
            if step != nil { self.waitingSettles.countRun(for: id) }
        }
        guard let step else { return self.finish(&run) }
        run.ran += 1
        if run.pauses || run.ran == 1 { run.last = step.run }
        run.justRan = true
        return .run(step)
    }

    /// A drain to idle (no pause, no target: not an `advance` to the clock's last instant) fails at the jump to a live
    /// repeating series' next tick, which never ends.
    @inline(__always)
    private mutating func liveSeriesFailure(_ run: Run, target: Int64) -> Failure? {
        guard !run.pauses, !run.movesClock, target == TaskKey.latestTime, let tick = self.seriesTickBlockingIdle()
        else { return nil }
        return self.failure(.liveSeries(method: run.method, tick: tick, limit: self.runawayLimit))
    }

    /// An auto-drain stops at a runaway, releasing the claim and keeping `failure` for the next run method.
    private mutating func autoDrainRunaway(_ failure: Failure) -> Action {
        self.deferredFailures.append(failure)
        self.endExecution()
        self.claim = nil
        var effects = Effects(woken: self.wokenWaiters(), broadcast: true)
        effects.setRare { $0.report = "\(ManualDispatcherError(failure))\n" }
        return .proceed(effects)
    }

    private mutating func finish(_ run: inout Run) -> Action {
        if run.requiresSettled, self.tracked.unsettledCount > 0 {
            return .fail(self.failure(.tasksNotSettled(method: run.method, limit: nil, tasks: self.tracked.unsettled)))
        }
        // The clock held for the last stretch to the target; and a drain to idle does not end on the woken tasks'
        // state, which it cannot wait for.
        if run.holdsClock, (run.movesClock && run.start.target > self.now) || run.requiresSettled,
            let failure = self.clockHeld(run.method, since: run.start)
        {
            return .fail(failure)
        }
        run.isClaimed = false
        return self.endRun(movingClockTo: run.movesClock ? run.start.target : nil)
    }
}
