import Dispatch
import TaskDispatch

extension ManualDispatcher {
    // MARK: - Machinery

    /// Where one pass of an async drain stopped.
    private enum SettleOutcome {
        /// Nothing is due up to the target and every tracked task is settled.
        case idle
        /// Nothing is due now, and some tracked task is not settled: wait for it.
        case unsettled
    }

    /// Runs and waits, pass after pass, until nothing is due up to the target and every tracked task is settled.
    ///
    /// The waits of one call share one limit of real time, which starts again only when the clock moves: at each time
    /// the clock shows, the call waits at most `limit` in all, however many tasks run in between.
    nonisolated(nonsending) func settle(
        method: String,
        limit: Duration?,
        movesClock movesClockToTarget: Bool,
        target: (_ now: Int64) -> Int64
    ) async throws -> Int {
        let limit = limit ?? self.waitLimit
        let id = self.monitor.withLock { $0.waiters.makeID() }
        var deadline = Self.deadline(after: limit)
        var targetTime: Int64 = 0
        var startTime: Int64 = 0
        let first = try await self.claimRun(
            method, waiter: id, until: deadline, limit: limit, reporting: .seenByAnEarlierDrain
        ) { schedule in
            targetTime = target(schedule.now)
            startTime = schedule.now
            guard targetTime < schedule.now else { return nil }
            return schedule.failure(.clockMovedBackwards(method: method, from: schedule.now, to: targetTime))
        }
        // However the call ends, the errors tracked tasks threw until then are the next call's to report.
        defer { self.monitor.withLock { $0.tracked.drainEnded() } }
        let bound = self.bound(from: first)
        var ran = 0
        var claimed = true
        var limitStartedAt = startTime  // the clock's time when the limit began
        while true {
            if !claimed {
                try await self.claimRun(method, waiter: id, until: deadline, limit: limit, reporting: .none)
            }
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
                return ran
            case .unsettled:
                self.endRun()
                claimed = false
                let budget = Swift.max(0, bound - ran)
                let onMainActor = MainActorExecution.isOnMainActor
                let now = self.monitor.withLock { schedule in
                    schedule.waitingSettles.suspend(id, method: method, budget: budget, onMainActor: onMainActor)
                    return schedule.now
                }
                // The clock moved since the limit began: the tasks settle at a new time, with the whole limit.
                if now != limitStartedAt {
                    limitStartedAt = now
                    deadline = Self.deadline(after: limit)
                }
                let woke = await self.suspend(until: .dueTaskOrSettled, id: id, deadline: deadline)
                // The tasks a tracked task ran for this drain while it waited count against its runaway bound.
                let ranForIt = self.monitor.withLock { $0.waitingSettles.resume(id) }
                ran += ranForIt
                // Tasks ran for it: one more pass, which may find the tasks settled, before the limit ends the call.
                if case .timedOut = woke, ranForIt > 0 { continue }
                switch woke {
                case .conditionMet:
                    continue
                case .cancelled:
                    self.monitor.retryAutoAdvance()
                    throw CancellationError()
                case .timedOut:
                    self.monitor.retryAutoAdvance()
                    let failure = self.monitor.withLock { schedule -> Failure? in
                        let unsettled = schedule.tracked.unsettled
                        guard !unsettled.isEmpty else { return nil }  // settled as the timer fired
                        return schedule.failure(
                            .tasksNotSettled(
                                method: method, limit: limit, tasks: unsettled,
                                since: limitStartedAt == startTime ? nil : limitStartedAt))
                    }
                    if let failure { throw ManualDispatcherError(failure) }
                }
            }
        }
    }

    /// Runs, for the one async drain suspended until its tracked tasks settle, the due tasks it would wake up to
    /// run, holding the claim ``Schedule/claimForWaitingSettle(thread:)`` took; then releases the claim and wakes
    /// the waiters the runs concern.
    ///
    /// Called by `dispatch(_:)` when a tracked task on the main actor dispatches work it awaits while the drain
    /// waits: the work runs inside that dispatch, so the await returns without suspending, where the drain would
    /// have resumed on its executor to run it and the task would have resumed after it, two more jobs on the main
    /// actor for each await. What runs, where, and in which order, is what the drain would run: only a drain on the
    /// main actor is helped, and the tasks count against its runaway bound. The dispatcher's tracking task-locals
    /// are unbound while they run; the task's own task-local values and its cancellation stay visible to them.
    func runForWaitingSettle() {
        while true {
            let (next, woken) = self.monitor.withLock { schedule -> (Schedule.WaitingSettleStep, [WaitResumer]?) in
                let next = schedule.nextForWaitingSettle()
                guard case .done = next else { return (next, nil) }
                return (next, schedule.wokenWaiters())
            }
            switch next {
            case .run(let step):
                TaskTracking.$dispatchingCall.withValue(nil) {
                    TaskTracking.$scope.withValue(nil) { self.execute(step.work) }
                }
            case .done(let drain):
                if let woken { WaitResumer.resumeAll(woken) }
                if drain {
                    self.drainAutomatically()
                } else {
                    self.monitor.broadcast()
                }
                return
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
            // A drain to idle never gets past a live repeating series.
            if jump, target == TaskKey.latestTime,
                let series = self.monitor.withLock({ schedule in
                    schedule.seriesTickBlockingIdle().map {
                        schedule.failure(.liveSeries(method: method, tick: $0, limit: self.runawayLimit))
                    }
                })
            {
                throw ManualDispatcherError(series)
            }
            if let step = self.monitor.withLock({ $0.next(in: .any, jumpingClockTo: jump ? target : nil) }) {
                self.execute(step.work)
                ran += 1
                jump = false
                continue
            }
            if jump { return .idle }
            let (settled, uncounted) = self.monitor.withLock { schedule -> (Bool, Failure?) in
                guard schedule.tracked.unsettledCount == 0 else { return (false, nil) }
                // The records say settled; for a task with uncounted child tasks, they cannot know.
                return (true, schedule.uncountedTasksFailure(method: method))
            }
            guard settled else { return .unsettled }
            if let uncounted { throw ManualDispatcherError(uncounted) }
            jump = true
        }
    }
}
