import TaskDispatch

/// The check of one rule against one dispatcher: dispatches recorded tasks, lets time pass, waits with a bound,
/// and turns what it saw into a ``DispatcherContractViolation``.
struct RuleCheck: Sendable {
    let rule: DispatcherContract.Rule
    let subject: DispatcherContract.Subject
    /// The real-time bound on the whole rule: every wait of the rule ends by `deadline`.
    let timeLimit: Duration
    let deadline: ContinuousClock.Instant
    let callSite: CallSite
    let log = ContractLog()

    /// Runs the rule's check; a decorator rule checks nothing without a `ManualDispatcher` underneath.
    func run() async throws {
        if let scope = self.subject.dispatcher as? DispatchScope, scope.isCancelled {
            throw self.violation(
                "the dispatcher is a DispatchScope that was cancelled before the check (cancelAll(), or its release): it cancels every dispatch at once, so no task can run. Make a live scope in the subject's closure"
            )
        }
        let base = self.subject.manualBase
        switch self.rule {
        case .exactlyOnce: try await self.checkExactlyOnce()
        case .neverInline: try await self.checkNeverInline()
        case .foregroundOnMainActorInOrder: try await self.checkForegroundOrder()
        case .delayIsLowerBound: try await self.checkDelayIsLowerBound()
        case .cancellationIsAllOrNothing:
            try await self.checkCancellingBeforeTheStart()
            try await self.checkCancellingRacingTheStart()
            try await self.checkCancellingAfterTheRun()
        case .cancelBeforeTheStartStopsTheTask: try await self.checkCancelBeforeTheStart()
        case .awaitableDispatchesDeliverTheOutcome: try await self.checkAwaitableOutcomes()
        case .awaitableDispatchesFollowCancellation: try await self.checkAwaitableCancellation()
        case .repeatingWorkTicksAtItsDueTimes:
            for context in [TaskContext.background, .foreground] { try await self.checkSeries(in: context) }
        case .decoratorForwardsTheClock: if let base { try await self.checkDecoratorForwardsTheClock(base) }
        case .decoratorForwardsStartTask: if let base { try await self.checkDecoratorForwardsStartTask(base) }
        case .decoratorKeepsAwaitedWaits: if let base { try await self.checkDecoratorKeepsAwaitedWaits(base) }
        }
    }

    /// Dispatches one recorded task, which runs `body` after recording its start; returns its number and handle.
    @discardableResult
    func dispatch(
        _ context: TaskContext,
        delay: Duration = .zero,
        note: String = "",
        body: (@Sendable () -> Void)? = nil
    ) -> (index: Int, handle: TaskHandle) {
        let (log, now) = (self.log, self.subject.now)
        let recorded = ContractTask(context: context, delay: delay, dispatchTime: now(), note: note)
        let index = log.record(.dispatching(recorded))
        let record: @Sendable () -> Void = {
            log.record(.started(index, onMainActor: MainActorExecution.isOnMainActor, startTime: now()))
            recorded.started.set()
            body?()
        }
        let work: DispatchedTask.Work = context == .foreground ? .foreground { record() } : .background(record)
        let task = DispatchedTask(unbound: work, label: "contract task \(index)", delay: delay, callSite: self.callSite)
        defer { log.record(.returned(index)) }
        return (index, self.subject.dispatcher.dispatch(task))
    }

    /// Runs the tasks the `ManualDispatcher` underneath holds that fall due within a day more of its virtual clock:
    /// what a decorator held later than the check asked (an added delay, which the contract allows; a second run,
    /// which it does not) runs now, and the rules see it. An error (a runaway) leaves them pending, for the waits.
    func runHeldTasks() {
        _ = try? self.subject.manualBase?.advance(by: .seconds(86_400))
    }

    /// Lets `duration` pass, then waits, until the rule's deadline at most, for `indices` to start; throws a violation
    /// naming the first that did not.
    func waitForStarts(of indices: [Int], after duration: Duration = .zero, reason: String = "") async throws {
        try self.subject.advance?(duration)
        let (tasks, _, counts) = self.log.current
        if indices.contains(where: { counts[$0] == 0 }) { self.runHeldTasks() }
        for index in indices where await tasks[index].started.wait(until: self.deadline) == nil {
            let counts = self.log.current.runCounts
            let missing = indices.filter { counts[$0] == 0 }
            guard let first = missing.first else { return }
            let started = indices.count - missing.count
            let others = missing.count > 1 ? " (and \(missing.count - 1) more, such as task \(missing[1]))" : ""
            let message =
                "\(self.log.describe(first)) never ran within the rule's time limit of \(self.timeLimit.millisecondsText)\(others); \(started) of \(indices.count) tasks ran\(reason)"
            // Tasks a decorator forwarded after its dispatch(_:) returned wait, due, on the ManualDispatcher underneath.
            let late = self.subject.manualBase.map { base in base.pendingTasks.count { $0.dueTime <= base.now } } ?? 0
            guard late > 0 else { throw self.timedOut(message) }
            throw self.violation(
                "\(message), and \(late) due tasks wait on the ManualDispatcher underneath: the decorator forwarded them after its dispatch(_:) returned (from another thread or a Task), so the test's drains did not see them. Forward each task inside dispatch(_:), before it returns"
            )
        }
    }

    /// Throws a violation for the first task that started more than once.
    func checkNoTaskRanTwice() throws(DispatcherContractViolation) {
        let counts = self.log.current.runCounts
        guard let twice = counts.indices.first(where: { counts[$0] > 1 }) else { return }
        throw self.violation("\(self.log.describe(twice)) ran \(counts[twice]) times")
    }

    /// Dispatches one immediate task of each context after everything else and waits for them, so that work the
    /// dispatcher still runs late (a duplicate, a task it was told to cancel) has had its turn.
    func waitForLateRuns() async throws {
        self.runHeldTasks()
        try await self.waitForStarts(of: TaskContext.allCases.map { self.dispatch($0, note: "dispatched last").index })
    }

    func violation(_ evidence: String, ranOutOfTime: Bool = false) -> DispatcherContractViolation {
        let dispatcherType = String(describing: type(of: self.subject.dispatcher))
        return DispatcherContractViolation(
            rule: self.rule, evidence: evidence, dispatcherType: dispatcherType, callSite: self.callSite,
            ranOutOfTime: ranOutOfTime)
    }

    /// A violation seen only because the rule's time limit passed: `evidence`, and below the default limit a note that
    /// a busy machine (a blocked cooperative pool, a busy main queue) can cause it too.
    func timedOut(_ evidence: String) -> DispatcherContractViolation {
        self.violation(
            self.timeLimit >= DispatcherContract.defaultTimeLimitPerRule
                ? evidence
                : "\(evidence) (with a time limit below the default \(formatRealTimeLimit(DispatcherContract.defaultTimeLimitPerRule)), a busy machine can cause this too: check again with the default before fixing the dispatcher)"
        )
    }

    /// The check ran out of time on evidence of the machine's load, not of the dispatcher's fault: `evidence`.
    func ranOutOfTime(_ evidence: String) -> DispatcherContractViolation {
        self.violation(evidence, ranOutOfTime: true)
    }
}
