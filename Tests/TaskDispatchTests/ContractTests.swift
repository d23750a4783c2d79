import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

/// The package's dispatchers against the public contract check, and the check against dispatchers broken on
/// purpose. The checks themselves live in `DispatcherContract`; this file holds no second copy of them.
@Suite struct ContractTests {
    /// The check's time limit per rule for a dispatcher expected to pass: the default, or twice the dispatchers' default
    /// wait limit where a run sets that longer. The sanitizer run sets it to 60 s: there, beside the stress suites, the
    /// check's own tasks once waited over 30 s for a thread, and three checks ran out of time on one rule.
    static let timeLimit = max(Duration.seconds(30), ManualDispatcher.defaultWaitLimit * 2)

    @Test(.timeLimit(.minutes(3)))
    func queueDispatcherKeepsTheContract() async throws {
        try await DispatcherContract.check(timeLimitPerRule: Self.timeLimit) { .realTime(QueueDispatcher()) }
    }

    @Test(.timeLimit(.minutes(3)))
    func queueDispatcherOnASerialQueueKeepsTheContract() async throws {
        try await DispatcherContract.check(timeLimitPerRule: Self.timeLimit) {
            .realTime(QueueDispatcher(backgroundQueue: DispatchQueue(label: "contract.serial")))
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func operationQueueDispatcherKeepsTheContract() async throws {
        try await DispatcherContract.check(timeLimitPerRule: Self.timeLimit) { .realTime(OperationQueueDispatcher()) }
    }

    @Test(.timeLimit(.minutes(3)))
    func operationQueueDispatcherWithOneBackgroundThreadKeepsTheContract() async throws {
        try await DispatcherContract.check(timeLimitPerRule: Self.timeLimit) {
            .realTime(try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 1))
        }
    }

    @Test(.timeLimit(.minutes(3)), arguments: ManualConfiguration.allCases)
    func manualDispatcherKeepsTheContract(configuration: ManualConfiguration) async throws {
        try await DispatcherContract.check(timeLimitPerRule: Self.timeLimit) { .manual(configuration.makeDispatcher()) }
    }

    /// Auto-advance jumps to a sleep from outside the tracked tasks inside its dispatch, so the clock rule's timer is
    /// seen pending only if the check waits before the sleep is dispatched: the rule failed about one run in twenty,
    /// naming a forwarded clock a real-time one. Each run takes microseconds unless the rule fails; the limit is generous,
    /// as under TSan beside the stress suites the sleeping task once waited over five seconds for a thread.
    @Test(.timeLimit(.minutes(3)), arguments: [false, true])
    func theClockRuleHoldsOnAnAutoAdvancingDispatcherInEveryRun(throughADecorator: Bool) async throws {
        for _ in 0..<500 {
            try await DispatcherContract.check(rules: [.decoratorForwardsTheClock], timeLimitPerRule: .seconds(60)) {
                let base = ManualDispatcher(mode: .autoAdvance)
                return throughADecorator ? .manual(GenericForwardingDecorator(base: base), over: base) : .manual(base)
            }
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func aDecoratorDrivenThroughItsOwnDriverKeepsTheContract() async throws {
        try await DispatcherContract.check(timeLimitPerRule: Self.timeLimit) {
            let manual = ManualDispatcher()
            return DispatcherContract.Subject(
                CountingDispatcher(base: manual),
                now: { manual.now },
                advance: { duration in try manual.advance(by: duration) }
            )
        }
    }

    @Test(.timeLimit(.minutes(3)), arguments: BrokenDispatcher.allCases)
    func aBrokenDispatcherIsCaughtByTheRuleItBreaks(broken: BrokenDispatcher) async throws {
        let violation = await #expect(throws: DispatcherContractViolation.self) {
            try await DispatcherContract.check(timeLimitPerRule: broken.timeLimitPerRule) {
                broken.makeSubject()
            }
        }
        let found = try #require(violation)
        #expect(found.rule == broken.brokenRule, "\(found)")
        #expect(!found.ranOutOfTime, "\(found)")
        #expect(found.evidence.contains(broken.evidence), "\(found)")
        #expect(found.description.contains("broke the rule \"\(broken.brokenRule.name)\""), "\(found)")
        #expect(found.description.contains(broken.brokenRule.text), "\(found)")
        #expect(found.description.contains("ContractTests.swift:"), "\(found)")
    }

    @Test(.timeLimit(.minutes(1)))
    func aDecoratorWhoseClockIsARealTimeClockFailsTheClockRuleAtOnce() async throws {
        // With an hour's limit, a check that waited for the sleep's timer would outlast the test's time limit.
        let violation = await #expect(throws: DispatcherContractViolation.self) {
            try await DispatcherContract.check(rules: [.decoratorForwardsTheClock], timeLimitPerRule: .seconds(3_600)) {
                let manual = ManualDispatcher()
                return .manual(ClockDroppingDecorator(base: manual), over: manual)
            }
        }
        let found = try #require(violation)
        #expect(found.evidence.contains("clock is ContinuousClock, a real-time clock"), "\(found)")
        #expect(found.evidence.contains("Forward the base's clock"), "\(found)")
    }

    /// A clock whose sleep returns an hour after the timer the ManualDispatcher underneath ran: the check cannot tell
    /// it from a machine that resumed the sleeping task too late, so it says it ran out of time, and blames no clock.
    @Test(.timeLimit(.minutes(1)), arguments: [ManualDispatcher.Mode.manual, .autoAdvance])
    func aSleepThatReturnsLateOnTheRightClockIsNotBlamedOnTheClock(mode: ManualDispatcher.Mode) async throws {
        let violation = await #expect(throws: DispatcherContractViolation.self) {
            try await DispatcherContract.check(rules: [.decoratorForwardsTheClock], timeLimitPerRule: .seconds(5)) {
                let base = ManualDispatcher(mode: mode)
                return .manual(ClockBendingDecorator(manual: base, bend: .wakesAnHourLateInRealTime), over: base)
            }
        }
        let found = try #require(violation)
        #expect(found.ranOutOfTime)
        // Or, on a machine too busy to start the sleeping task within the limit, that it had not started.
        #expect(
            found.evidence.contains(
                mode == .manual
                    ? "put its timer on the ManualDispatcher underneath, which ran it when it advanced by 1 h, but the sleep did not return within the time limit of 5 s"
                    : "although the ManualDispatcher underneath auto-advanced past it")
                || found.evidence.contains("the check's task that sleeps on the subject's clock had not started"),
            "\(found)")
        #expect(
            found.description.hasPrefix(
                "DispatcherContract: the check of ClockBendingDecorator ran out of time on the rule \"a decorator forwards the clock\""
            ), "\(found)")
        #expect(found.description.contains("run the check again with a longer timeLimitPerRule"), "\(found)")
        #expect(!found.description.contains("waits in real time") && !found.description.contains("broke the rule"))
    }

    /// At a time limit of zero, the ManualDispatcher's own clock is never called a real-time one: each check passes
    /// (the sleep was quick enough) or ran out of time, whichever branch of the rule it reached.
    @Test(.timeLimit(.minutes(5)), arguments: [ManualDispatcher.Mode.manual, .autoAdvance])
    func theDispatchersOwnClockIsNeverBlamedWhenTheCheckRunsOutOfTime(mode: ManualDispatcher.Mode) async throws {
        var ranOutOfTime = 0
        for _ in 0..<50 {
            do {
                try await DispatcherContract.check(rules: [.decoratorForwardsTheClock], timeLimitPerRule: .zero) {
                    let base = ManualDispatcher(mode: mode)
                    return .manual(base, over: base)
                }
            } catch let violation as DispatcherContractViolation {
                #expect(violation.ranOutOfTime, "\(violation)")
                #expect(violation.description.contains(" ran out of time on the rule "), "\(violation)")
                ranOutOfTime += 1
            }
        }
        #expect(ranOutOfTime > 0)  // a run that ends the waits at once cannot wait for a task to start
    }

    @Test(.timeLimit(.minutes(5)))
    func aDecoratorThatForwardsAfterItsDispatchReturnedIsToldSo() async throws {
        // Each task reaches the ManualDispatcher ten seconds after dispatch(_:) returned, after the check drove it:
        // under TSan beside the stress suites, a drive of the rule's 100 foreground tasks can take seconds.
        let violation = await #expect(throws: DispatcherContractViolation.self) {
            try await DispatcherContract.check(rules: [.exactlyOnce], timeLimitPerRule: .seconds(20)) {
                let manual = ManualDispatcher()
                return .manual(LateForwardingDecorator(base: manual), over: manual)
            }
        }
        let found = try #require(violation)
        #expect(found.evidence.contains("never ran within the rule's time limit"), "\(found)")
        #expect(
            found.evidence.contains("due tasks wait on the ManualDispatcher underneath: the decorator forwarded them"),
            "\(found)")
    }

    @Test(.timeLimit(.minutes(1)))
    func aDispatchThatWaitsForItsTaskBreaksNeverInline() async throws {
        // Checked on that rule alone: every immediate background dispatch of this dispatcher holds its caller, a
        // thread of the cooperative pool, until a thread of its own has run the task, and the other rules make
        // hundreds of them, which would slow the tests running beside this one.
        let violation = await #expect(throws: DispatcherContractViolation.self) {
            try await DispatcherContract.check(rules: [.neverInline], timeLimitPerRule: .seconds(30)) {
                .realTime(TaskWaitingDispatcher())
            }
        }
        let found = try #require(violation)
        #expect(found.rule == .neverInline, "\(found)")
        #expect(
            found.evidence.contains("for its dispatch call to return, in vain. A dispatch must not wait for its task"),
            "\(found)")
    }

    @Test(.timeLimit(.minutes(1)))
    func theDelayRuleLeavesOutItsWholeSecondDelayWhenTheLimitIsTooShortForIt() async throws {
        try await DispatcherContract.check(rules: [.delayIsLowerBound], timeLimitPerRule: .seconds(2)) {
            .realTime(QueueDispatcher())
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func aManualDispatcherPassedAsRealTimeIsCheckedOnItsVirtualClock() async throws {
        // It runs nothing on its own: checked in real time, every task "never ran", and the check blamed it.
        try await DispatcherContract.check(timeLimitPerRule: Self.timeLimit) { .realTime(ManualDispatcher()) }
    }

    @Test(.timeLimit(.minutes(1)))
    func aDispatcherThatRunsItsWorkInATaskIsNotInline() async throws {
        // A `Task { }` inherits the check's task-locals, so 1.0's first check, which marked the dispatch call with one,
        // called this dispatcher inline although no task ever ran on the caller's stack.
        try await DispatcherContract.check(rules: [.neverInline]) { .realTime(TaskHoppingDispatcher()) }
    }

    @Test(
        .timeLimit(.minutes(3)), arguments: [ForwardingDecoratorKind.generic, .rebuilding, .delaying, .delayingAnHour])
    func aDecoratorOverAManualDispatcherKeepsTheContract(kind: ForwardingDecoratorKind) async throws {
        try await DispatcherContract.check(timeLimitPerRule: Self.timeLimit) {
            let manual = ManualDispatcher()
            return .manual(kind.makeDecorator(over: manual), over: manual)
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func aCancelThatStopsNothingFailsTheAwaitableCancellationRule() async throws {
        let violation = await #expect(throws: DispatcherContractViolation.self) {
            try await DispatcherContract.check(
                rules: [.awaitableDispatchesFollowCancellation], timeLimitPerRule: .seconds(30)
            ) {
                .realTime(CancelRefusingDispatcher())
            }
        }
        let found = try #require(violation)
        #expect(found.rule == .awaitableDispatchesFollowCancellation, "\(found)")
        #expect(found.evidence.contains("it should have thrown CancellationError at once"), "\(found)")
    }

    @Test(.timeLimit(.minutes(3)))
    func aCancelThatAlwaysSucceedsFailsTheAwaitableCancellationRuleAfterTheStart() async throws {
        let violation = await #expect(throws: DispatcherContractViolation.self) {
            try await DispatcherContract.check(
                rules: [.awaitableDispatchesFollowCancellation], timeLimitPerRule: .seconds(30)
            ) {
                .realTime(AlwaysCancellingDispatcher())
            }
        }
        let found = try #require(violation)
        #expect(found.evidence.contains("although the closure had started and ran to the end"), "\(found)")
    }

    @Test func aViolationNamesTheRuleTheEvidenceTheTextAndTheCallSite() {
        let violation = DispatcherContractViolation(
            rule: .exactlyOnce,
            evidence: "task 17 (background, immediate) ran 2 times",
            dispatcherType: "TwiceDispatcher",
            callSite: CallSite(fileID: "MyTests/MyTests.swift", line: 9)
        )
        #expect(
            violation.description
                == "DispatcherContract: TwiceDispatcher broke the rule \"exactly once\" (checked at MyTests/MyTests.swift:9): task 17 (background, immediate) ran 2 times. The rule: Each task accepted by dispatch(_:) runs at most once. It runs exactly once unless its TaskHandle cancelled it first. Fix the dispatcher, then run the check again."
        )
    }

    @Test func anErrorFromTheFactoryPassesThroughUnchanged() async {
        struct FactoryFailed: Error {}
        await #expect(throws: FactoryFailed.self) {
            try await DispatcherContract.check { throw FactoryFailed() }
        }
    }

    @Test func theCheckRunsOnlyTheRulesItIsGiven() async throws {
        // The inline dispatcher breaks only "never inline"; without that rule it passes.
        let rules = DispatcherContract.Rule.allCases.filter { $0 != .neverInline }
        try await DispatcherContract.check(rules: rules, timeLimitPerRule: Self.timeLimit) {
            .realTime(InlineDispatcher())
        }
    }
}

/// The ManualDispatcher configurations the contract runs against.
enum ManualConfiguration: String, Sendable, CaseIterable, CustomStringConvertible {
    case manual
    case autoDrain
    case autoAdvance
    case priorityOrder
    case randomOrder

    var description: String { self.rawValue }

    func makeDispatcher() -> ManualDispatcher {
        switch self {
        case .manual: ManualDispatcher()
        case .autoDrain: ManualDispatcher(mode: .autoDrain)
        case .autoAdvance: ManualDispatcher(mode: .autoAdvance)
        case .priorityOrder: ManualDispatcher(order: .priority)
        case .randomOrder: ManualDispatcher(order: .random(seed: 42))
        }
    }
}

/// Decorators that forward everything a `ManualDispatcher` needs: generic over the base, or around `any
/// TaskDispatcher` rebuilding each task.
enum ForwardingDecoratorKind: String, Sendable, CustomStringConvertible {
    case generic
    case rebuilding
    case delaying
    /// Adds an hour to each delay: the check runs what the `ManualDispatcher` holds for a day more of its clock, the
    /// series rule included.
    case delayingAnHour

    var description: String { self.rawValue }

    func makeDecorator(over manual: ManualDispatcher) -> any TaskDispatcher {
        switch self {
        case .generic: GenericForwardingDecorator(base: manual)
        case .rebuilding: RebuildingDecorator(base: manual)
        case .delaying: RewritingDecorator.delaying(base: manual)
        case .delayingAnHour: RewritingDecorator.delaying(base: manual, by: .seconds(3_600))
        }
    }
}

/// A decorator generic over its base that forwards the clock, `startTask` and every task.
struct GenericForwardingDecorator<Base: TaskDispatcher>: TaskDispatcher {
    let base: Base

    var clock: Base.DispatcherClock { self.base.clock }

    func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        self.base.startTask(label: label, callSite: callSite, operation: operation)
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
    }
}

/// A decorator around `any TaskDispatcher` that rebuilds each task through the public initializer.
struct RebuildingDecorator: TaskDispatcher {
    let base: any TaskDispatcher
    let clock: AnyDispatcherClock

    init(base: any TaskDispatcher) {
        self.base = base
        self.clock = AnyDispatcherClock(base.clock)
    }

    func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        self.base.startTask(label: label, callSite: callSite, operation: operation)
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(
            DispatchedTask(
                task.work, label: task.label, delay: task.delay, priority: task.priority, callSite: task.callSite)
        )
    }
}

/// A decorator that counts dispatches and forwards them: the kind of custom dispatcher the check is for.
struct CountingDispatcher: TaskDispatcher {
    let base: any TaskDispatcher
    let count = Counter()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        _ = self.count.next()
        return self.base.dispatch(task)
    }
}
