import TaskDispatch

/// The one run method in progress: which, on which thread, and what it executes now. A second call from that thread
/// or a running foreground task is re-entrant (refused); one from another thread waits its turn.
struct RunClaim: Sendable {
    var method: String
    var thread: UInt
    /// The context of the task being executed right now, if any.
    var executing: TaskContext?
    /// The sequence number of that task: a number, not the task, so a step costs no reference count.
    var executingSequence: UInt64 = 0
}

extension Schedule {
    /// What a request for the claim on running got.
    enum ClaimOutcome {
        /// The caller holds the claim now, for a run that starts here.
        case claimed(RunStart)
        /// Another thread holds it: wait for its release, then ask again.
        case mustWait
        /// Refused: re-entrant, a wait that could deadlock, an auto-drain's failure, or a target out of reach.
        case refused(Failure)
    }

    /// Claims the right to run tasks for `method` and checks `target` (the time the run moves the clock to): not
    /// backwards, nor forward past a main-actor tracked task about to sleep if the caller `holdsMainActor`.
    /// `blocksMainActor` is refused rather than wait (the other run may need the main actor); `reporting`: which
    /// unclaimed errors of tracked tasks refuse the call.
    mutating func claim(
        _ method: String,
        thread: UInt,
        blocksMainActor: Bool,
        reporting errors: TrackedTasks.ErrorsToReport = .all,
        target: (_ now: Int64) -> Int64 = { $0 },
        holdsMainActor: Bool = false
    ) -> ClaimOutcome {
        guard let active = self.claim else {
            if let failure = self.takeDeferredFailure() ?? self.unobservedErrorsFailure(method: method, errors) {
                return .refused(failure)
            }
            self.autoAdvanceJumps = 0
            let targetTime = target(self.now)
            if targetTime < self.now {
                return .refused(self.failure(.clockMovedBackwards(method: method, from: self.now, to: targetTime)))
            }
            if holdsMainActor, targetTime > self.now, self.tracked.hasUnsettledOnMainActor {
                return .refused(
                    self.failure(.clockMovedWhileUnsettled(method: method, tasks: self.tracked.unsettledOnMainActor)))
            }
            self.claim = RunClaim(method: method, thread: thread)
            return .claimed(
                RunStart(
                    firstSequence: self.markCurrent(), pendingCount: self.pendingCount,
                    wakeups: self.tracked.wakeups, startTime: self.now, target: targetTime))
        }
        if active.thread == thread || (active.executing == .foreground && blocksMainActor) {  // from a running task
            return .refused(
                self.failure(.reentrantRun(method: method, running: active.method, culprit: self.executingTask)))
        }
        if blocksMainActor {
            // Waiting here could deadlock: the other run needs the main actor for its foreground tasks.
            return .refused(self.failure(.concurrentRun(method: method, running: active.method)))
        }
        return .mustWait
    }

    /// Hands out the failure an auto-drain left for the next run method, `verifyIdle()` or `value(of:)`, once.
    mutating func takeDeferredFailure() -> Failure? { self.deferredFailure.take() }

    /// Claims the run for an auto-drain if it is on, nobody runs tasks, and a task is due or auto-advance can jump.
    mutating func claimForAutoDrain(thread: UInt) -> Bool {
        guard self.autoDrain, self.claim == nil, self.hasDueTask || self.canAutoAdvance() else { return false }
        self.claim = RunClaim(method: "auto-drain", thread: thread)
        return true
    }

    /// Whether auto-advance may move the clock now: it is on, nothing is due, every tracked task has settled, a
    /// delayed task can fall due, and ``ClockHold`` allows the jump.
    mutating func canAutoAdvance() -> Bool {
        self.autoAdvanceTarget() != nil
            && self.clockHold.allowsJump(testWaits: self.testWaits, drainWaits: !self.waitingSettles.isEmpty)
    }

    /// The time auto-advance would move the clock to now, whoever asks: it is on, no runaway's failure waits,
    /// nothing is due, every tracked task has settled, and a delayed task can fall due. When only the ticks of live
    /// repeating series are left, it jumps only while the test waits for a task (a countdown's end; a series that
    /// never ends meets the runaway limit): else it would move the clock for ever, and `advance(by:)` runs them.
    @inline(__always)
    private mutating func autoAdvanceTarget() -> Int64? {
        guard self.mode == .autoAdvance, self.deferredFailure == nil, !self.hasDueTask,
            self.tracked.unsettledCount == 0, !self.onlySeriesLeftWithNoTestWaiting()
        else { return nil }
        return self.nextWaitingDueTime()
    }

    /// Out of line, so that auto-drain's checks stay inlined and short. A tick the test awaits itself counts as a
    /// wait of the test's.
    @inline(never)
    private mutating func onlySeriesLeftWithNoTestWaiting() -> Bool {
        !self.testWaits && !self.untrackedAwaitedTicks.contains(where: \.isPending)
            && self.seriesTickBlockingIdle(onlySeriesLeft: true) != nil
    }

    /// Whether the test waits on the dispatcher in `value(of:)`, for a tracked task or a plain one.
    var testWaits: Bool { self.waiters.waitsForATrackedTask || self.clockHold.untrackedValueWaits > 0 }

    /// The timer of auto-advance's hold `generation` fired (see ``ClockHold``): if the clock is still held with a
    /// jump to make, jumps go through from now on, and this returns the time the clock moves to.
    mutating func clockHoldTimerFired(for generation: UInt64) -> Int64? {
        let target = self.autoAdvanceTarget()
        let stillHeld = target != nil && !self.clockHold.allows(testWaits: self.testWaits)
        return self.clockHold.timerFired(for: generation, stillHeld: stillHeld) ? target : nil
    }

    /// Releases the claim, or hands it to an auto-drain on the same thread (`true`: the caller must now drain).
    mutating func release() -> Bool {
        self.endExecution()
        let drains = self.autoDrain && (self.hasDueTask || self.canAutoAdvance())
        if drains { self.claim?.method = "auto-drain" } else { self.claim = nil }
        return drains
    }
}
