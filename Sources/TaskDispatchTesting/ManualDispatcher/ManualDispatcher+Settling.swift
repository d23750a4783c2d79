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
        let id = self.storage.makeWaiterID()
        var deadline = Self.deadline(after: limit)
        let first = try await self.storage.claimRun(
            method, waiter: id, until: deadline, limit: limit, reporting: .seenByAnEarlierDrain, target: target)
        let (startTime, targetTime) = (first.startTime, first.target)
        // However the call ends, the errors tracked tasks threw until then are the next call's to report.
        defer { self.storage.send(.drainEnded) }
        let bound = first.bound(runawayLimit: self.runawayLimit)
        var ran = 0
        var claimed = true
        var limitStartedAt = startTime  // the clock's time when the limit began
        while true {
            if !claimed {
                try await self.storage.claimRun(method, waiter: id, until: deadline, limit: limit, reporting: .none)
            }
            let outcome: SettleOutcome
            do {
                outcome = try self.settlingPass(
                    method, bound: bound, ran: &ran, from: first, target: targetTime)
            } catch {
                self.storage.endRun()
                throw error
            }
            switch outcome {
            case .idle:
                self.storage.endRun(movingClockTo: movesClockToTarget ? targetTime : nil)
                return ran
            case .unsettled:
                self.storage.endRun()
                claimed = false
                let budget = Swift.max(0, bound - ran)
                let onMainActor = MainActorExecution.isOnMainActor
                let now = self.storage.drainWaits(id, method: method, budget: budget, onMainActor: onMainActor)
                // The clock moved since the limit began: the tasks settle at a new time, with the whole limit.
                if now != limitStartedAt {
                    limitStartedAt = now
                    deadline = Self.deadline(after: limit)
                }
                let woke = await self.storage.suspend(until: .dueTaskOrSettled, id: id, deadline: deadline)
                // The tasks a tracked task ran for this drain while it waited count against its runaway bound.
                let ranForIt = self.storage.drainResumed(id)
                ran += ranForIt
                // Tasks ran for it: one more pass, which may find the tasks settled, before the limit ends the call.
                if case .timedOut = woke, ranForIt > 0 { continue }
                switch woke {
                case .conditionMet:
                    continue
                case .cancelled:
                    self.storage.send(.autoAdvanceRetried)
                    throw CancellationError()
                case .timedOut:
                    self.storage.send(.autoAdvanceRetried)
                    let failure = self.storage.failure { schedule -> Failure? in
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
                let failure = self.storage.runawayFailure(method, ran: ran, from: start, clockLimit: target)
            {
                throw ManualDispatcherError(failure)
            }
            if let (step, _) = self.storage.next(in: .any, jumpingClockTo: jump ? target : nil) {
                self.storage.execute(step.work)
                ran += 1
                jump = false
                continue
            }
            if jump { return .idle }
            // The records say settled; for a task with uncounted child tasks, they cannot know.
            let (settled, uncounted) = self.storage.settlingCheck(method: method)
            guard settled else { return .unsettled }
            if let uncounted { throw ManualDispatcherError(uncounted) }
            jump = true
        }
    }
}
