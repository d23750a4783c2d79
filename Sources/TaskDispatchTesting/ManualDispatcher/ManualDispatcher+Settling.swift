import Dispatch
import TaskDispatch

extension ManualDispatcher {
    /// Runs and waits, pass after pass, until nothing is due up to the target and every tracked task is settled.
    ///
    /// The waits of one call share one limit of real time, which starts again only when the clock moves: at each time
    /// the clock shows, the call waits at most `limit` in all, however many tasks run in between.
    nonisolated(nonsending) func settle(
        _ name: String,
        _ argument: String? = nil,
        limit: Duration?,
        movesClock movesClockToTarget: Bool,
        target: (_ now: Int64) -> Int64
    ) async throws -> Int {
        let method = self.method(name, argument: argument, limit: limit)
        let limit = limit ?? self.waitLimit
        let id = self.storage.makeWaiterID()
        var deadline = limit.dispatchDeadline
        let first = try await self.storage.claimRun(
            method, waiter: id, until: deadline, limit: limit, reporting: .seenByAnEarlierDrain, target: target)
        // However the call ends, the errors tracked tasks threw until then are the next call's to report.
        defer { self.storage.send(.drainEnded) }
        let bound = first.bound(runawayLimit: self.runawayLimit)
        var run = Run(method, .settle)
        run.movesClock = movesClockToTarget
        run.start = first
        run.isClaimed = true
        var limitStartedAt = first.startTime  // the clock's time when the limit began
        while true {
            if !run.isClaimed {
                try await self.storage.claimRun(method, waiter: id, until: deadline, limit: limit, reporting: .none)
                run.isClaimed = true
            }
            // Runs what is due; stops (`true`) while tracked tasks have not settled, or at the end, released.
            guard try self.storage.resume(&run) else { return run.ran }
            self.storage.endRun()
            run.isClaimed = false
            let now = self.storage.drainWaits(
                id, method: method, budget: Swift.max(0, bound - run.ran), onMainActor: MainActorExecution.isOnMainActor
            )
            // The clock moved since the limit began: the tasks settle at a new time, with the whole limit.
            if now != limitStartedAt {
                limitStartedAt = now
                deadline = limit.dispatchDeadline
            }
            let woke = await self.storage.suspend(until: .dueTaskOrSettled, id: id, deadline: deadline)
            // The tasks a tracked task ran for this drain while it waited count against its runaway bound.
            let ranForIt = self.storage.drainResumed(id)
            run.ran += ranForIt
            // Woken, or tasks ran for it: one more pass.
            if woke == .conditionMet || (woke == .timedOut && ranForIt > 0) { continue }
            self.storage.send(.autoAdvanceRetried)
            guard woke == .timedOut else { throw CancellationError() }
            let since = limitStartedAt == first.startTime ? nil : limitStartedAt
            let failure = self.storage.failure {
                $0.notSettled(method, limit: limit, $0.tracked.unsettled, since: since)
            }
            if let failure { throw ManualDispatcherError(failure) }
        }
    }
}
