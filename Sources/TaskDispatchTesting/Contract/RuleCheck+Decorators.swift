import TaskDispatch

extension RuleCheck {
    func checkDecoratorForwardsTheClock(_ base: ManualDispatcher) async throws {
        let clock = self.subject.dispatcher.clock
        if clock is ContinuousClock || clock is SuspendingClock {
            throw self.violation(
                "the subject's clock is \(type(of: clock)), a real-time clock: a sleep on it would put no timer on the ManualDispatcher underneath and wait in real time. Forward the base's clock (var clock: Base.DispatcherClock { base.clock }, or AnyDispatcherClock(base.clock))"
            )
        }
        let pending = base.pendingTaskCount
        let (start, slept) = (base.now, ContractFlag())
        let (woke, sleeper) = ContractSignal.outcome {
            slept.set()
            try await clock.sleep(for: .seconds(3_600))
        }
        defer { sleeper.cancel() }
        let limit = self.timeLimit.millisecondsText
        // A machine too busy to run the sleeping task in time is no evidence against the clock; nor is the base's own.
        let notStarted =
            "the check's task that sleeps on the subject's clock had not started within the time limit of \(limit)"
        let isTheBasesClock = (clock as? ManualDispatcher.Clock)?.dispatcher === base
        if base.mode == .autoAdvance {
            // Auto-advance jumps to a sleep from outside the tracked tasks inside its dispatch, so the timer may never
            // be seen pending: the wake is the evidence (a sleep in real time would not wake within the limit).
            guard case .success = await woke.wait(until: self.deadline) else {
                guard slept.isSet else { throw self.ranOutOfTime(notStarted) }
                if base.now - start >= .seconds(3_600) || isTheBasesClock {
                    throw self.ranOutOfTime(
                        "a sleep of 1 h on the subject's clock did not return within the time limit of \(limit), although \(isTheBasesClock ? "the clock is the ManualDispatcher's own, which auto-advances" : "the ManualDispatcher underneath auto-advanced past it")"
                    )
                }
                throw self.timedOut(
                    "a sleep of 1 h on the subject's clock did not wake within the rule's time limit of \(limit), although the ManualDispatcher underneath auto-advances: the clock is \(type(of: clock)), so the sleep waits in real time"
                )
            }
            return
        }
        guard (try? await base.waitForPendingTasks(pending + 1, waitingUpTo: self.deadline - .now)) != nil else {
            guard slept.isSet else { throw self.ranOutOfTime(notStarted) }
            if isTheBasesClock || base.pendingTaskCount > pending {
                throw self.ranOutOfTime(
                    "a sleep of 1 h on the subject's clock\(isTheBasesClock ? ", the ManualDispatcher's own," : "") put its timer on the ManualDispatcher underneath only after the time limit of \(limit), or not yet"
                )
            }
            throw self.timedOut(
                "a sleep of 1 h on the subject's clock put no timer on the ManualDispatcher underneath within the rule's time limit of \(limit): the clock is \(type(of: clock)), so the sleep waits in real time"
            )
        }
        try await base.advance(by: .seconds(3_600))
        // A timer still pending after the advance was asked for a later time than the sleep's deadline.
        if base.pendingTaskCount > pending, let timer = base.pendingTasks.last(where: { $0.dueTime > base.now }) {
            throw self.violation(
                "a sleep of 1 h on the subject's clock did not wake when the ManualDispatcher underneath advanced by 1 h: its timer is still pending there, due at \(formatTime(timer.dueTime.nanosecondsSaturated)). The clock's sleep must ask the base for the deadline it was given"
            )
        }
        guard case .success = await woke.wait(until: self.deadline) else {
            throw self.ranOutOfTime(
                "a sleep of 1 h on the subject's clock put its timer on the ManualDispatcher underneath, which ran it when it advanced by 1 h, but the sleep did not return within the time limit of \(limit): the sleeping task resumed too late, or the clock's sleep waits for more once its timer ran"
            )
        }
    }

    func checkDecoratorForwardsStartTask(_ base: ManualDispatcher) async throws {
        let label = "contract tracked task"
        let unfinished = base.unfinishedTaskCount
        let task = self.subject.dispatcher.startTask(label: label, callSite: self.callSite) { 42 }
        let tracked =
            base.unfinishedTaskCount > unfinished || base.pendingTasks.contains { $0.label == label }
            || base.history.contains { $0.task.label == label }
        guard tracked else {
            task.cancel()
            throw self.violation(
                "a task started with startTask through the subject left no start pending on the ManualDispatcher underneath and is not counted in its unfinishedTaskCount: it is a plain Task, which the drains do not wait for and whose errors nobody reports"
            )
        }
        let (outcome, _) = ContractSignal.outcome { try await task.value }
        try await base.runUntilIdle(waitingUpTo: self.deadline - .now)
        switch await outcome.wait(until: self.deadline) {
        case .success(42)?: return
        case nil:
            throw self.timedOut(
                "a task started with startTask through the subject did not return within the rule's time limit of \(self.timeLimit.millisecondsText) once drained"
            )
        default:
            throw self.violation("a task started with startTask through the subject did not return 42 once drained")
        }
    }

    func checkDecoratorKeepsAwaitedWaits(_ base: ManualDispatcher) async throws {
        let what = "a tracked task awaiting runInBackground(after: 1 s) through the subject"
        let notWaiting = "\(what) did not read as waiting on the ManualDispatcher's own work"
        let dispatcher = self.subject.dispatcher
        let task = base.startTask(label: "contract waiting task", callSite: self.callSite) { () async throws -> Int in
            try await dispatcher.runInBackground(after: .seconds(1), label: "contract awaited") { 42 }
        }
        defer { task.cancel() }
        do {
            try await base.runUntilIdle(waitingUpTo: self.deadline - .now)
        } catch let error as ManualDispatcherError {
            let evidence = "\(notWaiting); runUntilIdle(waitingUpTo:) threw: \(error.summary)"
            switch error.kind {
            case .unsettledTasks, .waitTimedOut: throw self.timedOut(evidence)
            default: throw self.violation(evidence)
            }
        }
        // Claimed through `value(of:)`: the drain leaves a tracked task's error for the test to claim.
        let (outcome, _) = ContractSignal.outcome { try await base.value(of: task) }
        switch await outcome.wait(until: self.deadline) {
        case .success(42)?: return
        case .failure(let error as ManualDispatcherError)?:
            // The dispatcher bounded the await as one from outside its tracked tasks, and ended it.
            throw self.violation("\(notWaiting); its await ended with: \(error.summary)")
        case nil:
            throw self.timedOut(
                "\(what) did not return within the rule's time limit of \(self.timeLimit.millisecondsText) once drained"
            )
        default:
            throw self.violation("\(what) did not return 42 once drained")
        }
    }
}
