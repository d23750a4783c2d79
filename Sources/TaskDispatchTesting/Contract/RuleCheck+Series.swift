import TaskDispatch

extension RuleCheck {
    /// Ticks of a series every 20 ms, their times on the dispatcher's clock, a cancel from inside the third tick and
    /// a late-run pass: a fourth tick, or a tick before its due time, is a violation.
    func checkSeries(in context: TaskContext) async throws {
        let interval = Duration.milliseconds(20)
        let elapsed = Self.stopwatch(on: self.subject.dispatcher)
        let log = self.log
        let seriesTask = ContractTask(context: context, delay: interval, dispatchTime: self.subject.now(), note: "")
        let index = log.record(.dispatching(seriesTask))
        let third = ContractFlag()
        let cancelSeries = TaskCancelRequest()
        let tick: @Sendable () -> Void = {
            if log.record(.started(index, onMainActor: MainActorExecution.isOnMainActor, startTime: elapsed())) == 3 {
                cancelSeries.cancel()
                third.set()
            }
        }
        let dispatcher = self.subject.dispatcher
        let (fileID, line) = (self.callSite.fileID, self.callSite.line)
        let series =
            context == .background
            ? dispatcher.background(every: interval, label: "contract series", fileID: fileID, line: line, tick)
            : dispatcher.foreground(every: interval, label: "contract series", fileID: fileID, line: line) { tick() }
        log.record(.returned(index))
        cancelSeries.hold { series.cancel() }
        // A driven clock moves one interval at a time (a decorator may add delays) until the third tick. Unless the
        // dispatcher's clock moved by exactly the time let pass, it is a clock of its own (a decorator that does not
        // forward `clock`) that real time moves, and the ticks' times on it say nothing.
        let before = elapsed()
        var passed = Duration.zero
        while self.subject.advance != nil, !third.isSet, passed < interval * 3_000 {
            try self.subject.advance?(interval)
            passed += interval
        }
        let drivesTheClock = self.subject.advance == nil || elapsed() - before == passed
        if !third.isSet { self.runHeldTasks() }  // ticks a decorator delays by more than a minute
        if await third.wait(until: self.deadline) == nil {
            throw self.timedOut(
                "a \(context) series every \(interval.millisecondsText) ticked \(self.log.current.runCounts[index]) times within the rule's time limit of \(self.timeLimit.millisecondsText), not 3"
            )
        }
        try self.subject.advance?(interval * 3)
        try await self.waitForLateRuns()
        let seen = self.log.current.runs.filter { $0.task == index }.map(\.startTime)
        if seen.count > 3 {
            throw self.violation(
                "a \(context) series ticked \(seen.count) times, at \(seen.map(\.millisecondsText).joined(separator: ", ")) on its clock, though cancel() was called inside its third tick"
            )
        }
        for (offset, time) in seen.enumerated() where drivesTheClock && time < interval * (offset + 1) {
            throw self.violation(
                "tick \(offset + 1) of a \(context) series every \(interval.millisecondsText) ran \(time.millisecondsText) after the series started on the dispatcher's clock, before its due time"
            )
        }
        if !series.isCancelled {
            throw self.violation(
                "the handle of a \(context) series cancelled inside its third tick reads isCancelled false")
        }
    }

    /// The time since now on `dispatcher`'s own clock.
    private static func stopwatch(on dispatcher: some TaskDispatcher) -> @Sendable () -> Duration {
        let clock = dispatcher.clock
        let start = clock.now
        return { start.duration(to: clock.now) }
    }
}
