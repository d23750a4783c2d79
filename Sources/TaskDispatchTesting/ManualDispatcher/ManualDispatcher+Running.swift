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
        try self.refuseTrackedCaller(method, isAsync: false)
        let thread = currentThreadIdentity()
        let blocksMainActor = MainActorExecution.isOnMainActor
        let outcome = self.monitor.waitForResult({ schedule in
            Self.claim(&schedule, method, thread: thread, blocksMainActor: blocksMainActor, check: check)
        })
        switch outcome {
        case .started(let start):
            return start
        case .refused(let failure):
            self.monitor.broadcast()
            throw ManualDispatcherError(failure)
        }
    }

    /// Claims the right to run tasks for the async run method `method`, as ``claimRun(_:check:)`` does, except
    /// that while another thread runs tasks it suspends until that run ends, instead of blocking a thread or, on
    /// the main actor, refusing: a suspended caller holds no thread that the other run may need.
    ///
    /// The wait ends at `deadline`, the end of the call's real-time `limit`, and registers as waiter `id`, which
    /// must not be registered now. `errors`: which errors of tracked tasks that nobody claimed refuse the call.
    ///
    /// - Throws: What ``claimRun(_:check:)`` throws, except that it waits where that refuses with
    ///   ``ManualDispatcherError/Kind/concurrentRun``; ``ManualDispatcherError/Kind/concurrentRun`` when the other
    ///   run still holds the claim at `deadline`; `CancellationError` when the calling task is cancelled while it
    ///   waits.
    @discardableResult
    nonisolated(nonsending) func claimRun(
        _ method: String,
        waiter id: DispatchWaiters<WaitResumer>.ID,
        until deadline: DispatchTime,
        limit: Duration,
        reporting errors: TrackedTasks.ErrorsToReport = .all,
        check: (inout Schedule) -> Failure? = { _ in nil }
    ) async throws -> RunStart {
        // From inside one of this dispatcher's tracked tasks, the run would wait for that task to settle: refused at
        // once, where it would otherwise wait out its limit and blame something foreign.
        try self.refuseTrackedCaller(method, isAsync: true)
        while true {
            let thread = currentThreadIdentity()  // again after each suspension: the call may resume elsewhere
            let outcome = self.monitor.withLock { schedule in
                Self.claim(&schedule, method, thread: thread, blocksMainActor: false, reporting: errors, check: check)
            }
            switch outcome {
            case .started(let start)?:
                return start
            case .refused(let failure)?:
                self.monitor.broadcast()
                throw ManualDispatcherError(failure)
            case nil:
                break
            }
            switch await self.suspend(until: .runReleased, id: id, deadline: deadline) {
            case .conditionMet:
                continue  // claim it, unless another caller claimed it first
            case .cancelled:
                throw CancellationError()
            case .timedOut:
                let failure = self.monitor.withLock { schedule -> Failure? in
                    guard let active = schedule.claim else { return nil }  // released as the timer fired
                    return schedule.failure(.runNotReleased(method: method, running: active.method, limit: limit))
                }
                if let failure { throw ManualDispatcherError(failure) }
            }
        }
    }

    /// Refuses run method `method` when one of this dispatcher's tracked tasks calls it: an async drain there would
    /// wait for that task to settle, that is for itself, and a synchronous one would move the clock under the
    /// other tracked tasks without waiting for them.
    private func refuseTrackedCaller(_ method: String, isAsync: Bool) throws(ManualDispatcherError) {
        guard let scope = self.monitor.trackedCaller else { return }
        throw ManualDispatcherError(
            self.monitor.withLock {
                $0.failure(.runFromTrackedTask(method: method, task: $0.tracked.name(scope.id), isAsync: isAsync))
            })
    }

    /// One request for the claim, in the caller's critical section: `nil` while the caller must wait.
    private static func claim(
        _ schedule: inout Schedule,
        _ method: String,
        thread: UInt,
        blocksMainActor: Bool,
        reporting errors: TrackedTasks.ErrorsToReport = .all,
        check: (inout Schedule) -> Failure?
    ) -> ClaimResult? {
        switch schedule.claim(method, thread: thread, blocksMainActor: blocksMainActor, reporting: errors) {
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
    }

    /// Releases the run, moving the clock to `time` first if given, and wakes the waiters the runs and the release
    /// concern; drains at once if auto-drain is on.
    func endRun(movingClockTo time: Int64? = nil) {
        let (drain, woken) = self.monitor.withLock { schedule -> (Bool, [WaitResumer]?) in
            if let time { schedule.moveClock(to: time) }
            let drain = schedule.release()
            return (drain, drain ? nil : schedule.wokenWaiters())  // an auto-drain goes on holding the claim
        }
        if let woken { WaitResumer.resumeAll(woken) }
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
        // A drain on a tracked task's thread (its sleep let the clock move) runs other code's work: unbound, the
        // tracked-task task-locals would make what that work dispatches count as the tracked task's.
        if TaskTracking.scope != nil || TaskTracking.dispatchingCall != nil {
            TaskTracking.$dispatchingCall.withValue(nil) {
                TaskTracking.$scope.withValue(nil) { self.drainAutomaticallyHere() }
            }
        } else {
            self.drainAutomaticallyHere()
        }
    }

    private func drainAutomaticallyHere() {
        var ran = 0
        while true {
            switch self.withLock({ $0.autoDrainStep(ran: ran) }) {
            case .run(let step):
                switch step.work {
                case .background(let work): work()
                case .foreground(let work): MainActorExecution.runAndWait(work)
                }
                ran += 1
            case .finished(let woken):
                self.broadcast()
                if let woken { WaitResumer.resumeAll(woken) }
                return
            case .runaway(let failure, let woken):
                self.broadcast()
                if let woken { WaitResumer.resumeAll(woken) }
                writeToStandardError("\(ManualDispatcherError(failure))\n")
                return
            }
        }
    }

    /// The tracked task of this monitor's dispatcher that the calling code runs in (a task it started with
    /// `startTask`, a child task of one, or a task one of them created), if any.
    var trackedCaller: TrackedTaskScope? {
        TrackedTaskScope.current.flatMap { $0.monitor === self ? $0 : nil }
    }

    /// Whether the calling code is the test, or code it called: not one of this dispatcher's tracked tasks.
    var callerIsUntracked: Bool {
        self.trackedCaller == nil
    }

    /// The timer of auto-advance's hold `generation` fired (see ``ClockHold``): if the clock is still held, the
    /// test awaited something the dispatcher cannot see, so the clock moves now, and from now on without waiting
    /// for the test; a note on standard error says so, and what to await instead.
    func clockHoldTimerFired(for generation: UInt64, limit: Duration, dispatcherCreatedAt createdAt: CallSite) {
        let thread = currentThreadIdentity()
        let (next, drain) = self.withLock { schedule -> (Int64?, Bool) in
            guard let next = schedule.clockHoldTimerFired(for: generation) else { return (nil, false) }
            return (next, schedule.claimForAutoDrain(thread: thread))
        }
        guard let next else { return }
        writeToStandardError(
            """
            ManualDispatcher (autoAdvance, created at \(createdAt)): every tracked task had settled and the clock \
            could move to \(formatTime(next)), but the test did not wait on the dispatcher for \
            \(formatRealTimeLimit(limit)): it awaited something the dispatcher cannot see (a tracked task's \
            `task.value`, code that awaits one, an XCTest expectation), or nothing (a preview). The clock moves \
            now, and from now on without waiting for the test, so a task the test starts next may start late. In \
            a test, await through the dispatcher instead: `try await dispatcher.value(of: task)`, `try await \
            dispatcher.value(of: Task { await model.refresh() })` for code that awaits a task itself, or `try \
            await dispatcher.runUntilIdle()`.

            """
        )
        if drain { self.drainAutomatically() }
    }
}
