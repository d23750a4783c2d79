import Dispatch
import TaskDispatch

extension ManualDispatcher {
    /// What a request for the claim got, once it stopped waiting.
    private enum ClaimResult {
        case started(RunStart)
        case refused(Failure)
    }

    /// Where a run method starts: what the drain bound and the runaway diagnosis measure from.
    struct RunStart {
        /// The sequence number the first task dispatched during the run gets.
        var firstSequence: UInt64
        /// The tasks pending when the run started.
        var pendingCount: Int
        /// The tracked tasks' ``TrackedTasks/wakeups`` when the run started.
        var wakeups: UInt64
    }

    /// Claims the right to run tasks for `method`, waiting (blocked on a condition, never spinning) while another
    /// thread runs tasks; then runs `check` in the same critical section, which may refuse the call.
    ///
    /// - Throws: ``ManualDispatcherError/Kind/reentrantRun`` from inside a task,
    ///   ``ManualDispatcherError/Kind/concurrentRun`` on the main actor during another thread's run, a failure an
    ///   auto-drain left, or what `check` returns (the claim is then released).
    @discardableResult
    func claimRun(
        _ method: String,
        check: (inout Schedule) -> Failure? = { _ in nil }
    ) throws(ManualDispatcherError) -> RunStart {
        let thread = currentThreadIdentity()
        let onMainActor = MainActorExecution.isOnMainActor
        let outcome = self.monitor.waitForResult({ schedule -> ClaimResult? in
            switch schedule.claim(method, thread: thread, onMainActor: onMainActor) {
            case .mustWait:
                return nil
            case .refused(let failure):
                return .refused(failure)
            case .claimed:
                if let failure = check(&schedule) {
                    schedule.claim = nil
                    return .refused(failure)
                }
                return .started(
                    RunStart(
                        firstSequence: schedule.markCurrent(),
                        pendingCount: schedule.pendingCount,
                        wakeups: schedule.tracked.wakeups
                    )
                )
            }
        })
        switch outcome {
        case .started(let start):
            return start
        case .refused(let failure):
            self.monitor.broadcast()
            throw ManualDispatcherError(failure)
        }
    }

    /// Releases the run, moving the clock to `time` first if given; drains at once if auto-drain is on.
    func endRun(movingClockTo time: Int64? = nil) {
        let drain = self.monitor.withLock { schedule in
            if let time { schedule.moveClock(to: time) }
            return schedule.release()
        }
        if drain {
            self.drainAutomatically()
        } else {
            self.monitor.broadcast()
        }
    }

    /// Runs a task's closure outside the lock: background work inline, foreground work on the main actor.
    @inline(__always)
    func execute(_ work: DispatchedTask.Work) {
        switch work {
        case .background(let work): work()
        case .foreground(let work): MainActorExecution.runAndWait(work)
        }
    }

    /// The auto-drain loop, holding the claim: runs due tasks until none is left, then releases the claim in the
    /// same critical section that found nothing to run.
    func drainAutomatically() {
        self.monitor.drainAutomatically()
    }
}

extension Monitor where Value == Schedule {
    /// The auto-drain loop, for a caller that holds the claim (see ``ManualDispatcher/drainAutomatically()``).
    func drainAutomatically() {
        var ran = 0
        while true {
            switch self.withLock({ $0.autoDrainStep(ran: ran) }) {
            case .run(let step):
                switch step.work {
                case .background(let work): work()
                case .foreground(let work): MainActorExecution.runAndWait(work)
                }
                ran += 1
            case .finished:
                self.broadcast()
                return
            case .runaway(let failure):
                self.broadcast()
                // A `value(of:)` waiting for a task that will not finish now reports the runaway.
                if let woken = self.withLock({ $0.waiters.isEmpty ? nil : $0.waitersToWake() }) {
                    WaitResumer.resumeAll(woken)
                }
                writeToStandardError("\(ManualDispatcherError(failure))\n")
                return
            }
        }
    }
}
