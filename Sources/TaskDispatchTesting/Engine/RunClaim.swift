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
    /// Whether that task is tracked work (``ClockHold/trackedWork``), so that what it dispatches is too.
    var executingTrackedWork = false
}

/// The foreground tasks whose closures run on the main actor now, innermost last (one that dispatches to another
/// dispatcher may run that one's task inline), by storage and sequence number: main-actor code that dispatches is such
/// a closure only then, not while another thread's run waits for the main queue.
@MainActor enum ForegroundBody {
    static var running: [(storage: ObjectIdentifier, sequence: UInt64)] = []
}

extension Schedule {
    enum ClaimOutcome {
        /// The caller holds the claim now, for a run that starts here.
        case claimed(RunStart)
        /// Another thread holds it: wait for its release, then ask again.
        case mustWait
        /// Refused: re-entrant, a wait that could deadlock, an auto-drain's failure, or a target out of reach.
        case refused(Failure)
    }

    /// Claims the run for `method` if `target` (the clock's at the end) is not backwards, nor past an unsettled
    /// main-actor tracked task while the caller `holdsMainActor`; `blocksMainActor` is refused rather than wait.
    mutating func claim(
        _ method: String,
        thread: UInt,
        blocksMainActor: Bool,
        reporting errors: TrackedTasks.ErrorsToReport = .all,
        target: (_ now: Int64) -> Int64 = { $0 },
        holdsMainActor: Bool = false
    ) -> ClaimOutcome {
        guard let active = self.claim else {
            if let failure = self.takeDeferredFailure(by: method)
                ?? self.unobservedErrorsFailure(method: method, errors)
            {
                return .refused(failure)
            }
            self.autoAdvanceJumps = 0
            let targetTime = target(self.now)
            if targetTime < self.now {
                return .refused(self.failure(.clockMovedBackwards(method: method, from: self.now, to: targetTime)))
            }
            let blocking = holdsMainActor && targetTime > self.now ? self.tracked.unsettledOnMainActor : []
            if !blocking.isEmpty {
                return .refused(self.failure(.clockMovedWhileUnsettled(method: method, tasks: blocking)))
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
            return .refused(
                self.failure(.concurrentRun(method: method, running: active.method, executing: self.executingTask)))
        }
        return .mustWait
    }

    /// Claims the run for an auto-drain if it is on, nobody runs tasks, and a task is due or auto-advance can jump.
    mutating func claimForAutoDrain(thread: UInt) -> Bool {
        guard self.autoDrain, self.claim == nil, self.hasDueTask || self.canAutoAdvance() else { return false }
        self.claim = RunClaim(method: "auto-drain", thread: thread)
        return true
    }

    /// Whether auto-advance may move the clock now (see `autoAdvanceTarget`) and ``ClockHold`` allows the jump.
    mutating func canAutoAdvance() -> Bool {
        self.autoAdvanceTarget() != nil
            && self.clockHold.allowsJump(testWaits: self.testWaits, drainWaits: !self.waitingSettles.isEmpty)
    }

    /// Where auto-advance would move the clock now, whoever asks: nothing due, no failure left for the next call,
    /// every tracked task settled. With only live series' ticks left, only while the test waits (else it would jump for ever).
    @inline(__always)
    private mutating func autoAdvanceTarget() -> Int64? {
        guard self.mode == .autoAdvance, self.deferredFailures.isEmpty, !self.hasDueTask,
            self.tracked.unsettledCount == 0, !self.onlySeriesLeftWithNoTestWaiting()
        else { return nil }
        return self.nextWaitingDueTime()
    }

    /// Out of line, so that auto-drain's checks stay short. A tick the test awaits itself is a wait of the test's.
    @inline(never)
    private mutating func onlySeriesLeftWithNoTestWaiting() -> Bool {
        !self.testWaits && !self.untrackedAwaitedTicks.contains(where: \.isPending)
            && self.seriesTickBlockingIdle(onlySeriesLeft: true) != nil
    }

    /// Whether the test waits on the dispatcher in `value(of:)`, for a tracked task or a plain one.
    var testWaits: Bool { self.waiters.waitsForATrackedTask || self.clockHold.untrackedValueWaits > 0 }

    /// The timer of auto-advance's hold `generation` fired: if still held, jumps go through from now on, the first
    /// to the time returned.
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
