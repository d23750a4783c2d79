import TaskDispatch

extension ManualDispatcher {
    /// Runs and waits, pass after pass, until nothing is due up to the target and every tracked task is settled; at
    /// each time the clock shows, the call waits at most `limit` in all, however many tasks run in between.
    nonisolated(nonsending) func settle(
        _ name: String,
        _ argument: String? = nil,
        limit: Duration?,
        movesClock movesClockToTarget: Bool,
        target: (_ now: Int64) -> Int64
    ) async throws -> Int {
        let method = self.method(name, argument: argument, limit: limit)
        let limit = limit ?? self.waitLimit
        let id = self.storage.update { $0.waiters.makeID() }
        var deadline = limit.dispatchDeadline
        var limitStartedAt: Int64?  // the clock's time when the limit began again, if the clock moved
        var run = Run(method, .settle)
        run.movesClock = movesClockToTarget
        // However the call ends once it has claimed, the errors tracked tasks threw until then are the next call's.
        defer { if run.began { self.storage.update { $0.tracked.drainEnded() } } }
        // Runs what is due; pauses (`true`) while tracked tasks have not settled.
        while try await self.storage.run(
            &run, waiter: id, until: deadline, limit: limit, reporting: .seenByAnEarlierDrain, target: target)
        {
            let startTime = run.start.startTime
            let woke = await self.storage.awaitSettled(&run, id: id) { now in
                // The clock moved: the tasks settle at a new time, with the whole limit.
                if now != limitStartedAt ?? startTime {
                    limitStartedAt = now
                    deadline = limit.dispatchDeadline
                }
                return deadline
            }
            if woke == .conditionMet { continue }
            self.storage.changeTrackedTasks()  // auto-advance may now make a jump it held
            guard woke == .timedOut else { throw CancellationError() }
            let failure = self.storage.update { schedule in
                schedule.tracked.waitedForWokenTasks()  // those still unsettled wait on work it does not own
                return schedule.notSettled(method, limit: limit, schedule.tracked.unsettled, since: limitStartedAt)
            }
            if let failure { throw ManualDispatcherError(failure) }
        }
        return run.ran
    }
}
