import Foundation
import TaskDispatch
import Testing

@testable import TaskDispatchTesting

/// `ManualDispatcher` against ``ReferenceScheduler``, an obviously correct model of it, over random operation
/// sequences: after every operation, the two must agree on what the call returned or threw, which tasks ran and in
/// what order, the clock, the pending list and the tracked tasks left; and the dispatcher's invariants must hold.
///
/// The sequences dispatch, cancel, step and drain synchronously and asynchronously, move the clock, switch modes and
/// orders, and start tracked tasks whose bodies await `runInBackground`, `runOnMainActor` and sleeps on the clock, or
/// (the sequences without tracked tasks) repeating series, stopped through their handles; they dispatch through one
/// or two `DispatchScope`s too, and cancel them with `cancelAll()`.
/// While a tracked task's body runs on its own executor, what the dispatcher shows depends on a race; the comparison
/// then checks only what the race cannot change, and everything at the next settled point
/// (`ReferenceScheduler+TrackedTasks.swift`).
///
/// A failure names its seed and prints the sequence shrunk to the operations that still fail. The environment
/// scales it up: `TASKDISPATCH_MODEL_SEQUENCES=1000000 swift test --filter ModelBasedTests` runs a million
/// sequences; `TASKDISPATCH_MODEL_SEED=n` starts at seed `n` (with `TASKDISPATCH_MODEL_SEQUENCES=1`, replays it).
///
/// Every run is made on a thread of its own (``onAThreadOfItsOwn(_:)``): neither the main actor nor a thread of the
/// cooperative pool is held for the seconds it runs (the other suites need both: their async waits have real-time
/// limits, and the tracked tasks and async calls of the model itself need the pool), and foreground tasks hop to the
/// main queue one at a time.
@Suite struct ModelBasedTests {
    /// Sequences in a normal `swift test` run: about 310,000 operations, some 45 s on two cores while the other suites
    /// run beside it (about 30 s alone); `TASKDISPATCH_MODEL_SEQUENCES` takes it to millions locally.
    static let defaultSequences = 2_500

    @Test func theDispatcherAgreesWithTheReferenceOnRandomSequences() async {
        let environment = ProcessInfo.processInfo.environment
        let sequences = environment["TASKDISPATCH_MODEL_SEQUENCES"].flatMap(Int.init) ?? Self.defaultSequences
        let firstSeed = environment["TASKDISPATCH_MODEL_SEED"].flatMap(UInt64.init) ?? 0
        let outcome = await onAThreadOfItsOwn { Self.run(sequences, from: firstSeed) }
        if let failure = outcome.failure {
            Issue.record(Comment(rawValue: failure))
            return
        }
        let totals = outcome.totals
        print(
            "Model-based test: \(sequences) sequences (seeds \(firstSeed)..<\(firstSeed &+ UInt64(sequences))), \(totals.operations) operations (\(totals.asyncOperations) async steps, drains and value(of:); \(totals.trackedTasks) tracked tasks started; \(totals.racingOperations) compared while a tracked task raced the test; \(totals.series) series started; \(totals.scopeOperations) dispatches, series and cancelAll() through scopes), \(totals.runs) task runs (\(totals.trackedTaskRuns) of tracked tasks, \(totals.tickRuns) ticks), \(totals.errors) thrown errors, compared with the reference scheduler in \(outcome.elapsed)"
        )
        #expect(totals.operations > sequences * 50)
    }

    /// Runs `count` sequences from seed `firstSeed` on, stopping at the first that fails, with its report.
    private static func run(
        _ count: Int,
        from firstSeed: UInt64
    ) -> (totals: ModelRun.Totals, failure: String?, elapsed: Duration) {
        let clock = ContinuousClock()
        let start = clock.now
        var totals = ModelRun.Totals()
        for index in 0..<UInt64(count) {
            let seed = firstSeed &+ index
            let (scenario, failure) = ModelRun.generate(seed: seed, totals: &totals)
            if let failure {
                return (totals, ModelRun.report(seed: seed, scenario: scenario, failure: failure), clock.now - start)
            }
        }
        return (totals, nil, clock.now - start)
    }

    /// The comparison can fail: a reference that forgets priorities, that allows random order fewer choices than it
    /// has, or that wakes a tracked task's sleep without waiting for the clock, is caught, and its sequence shrinks to
    /// the few operations that show the difference.
    @Test(arguments: [ReferenceScheduler.Mistake.ignoresPriority, .narrowsRandomOrder, .wakesSleepsAtOnce])
    func aWrongReferenceIsCaughtAndItsSequenceShrunk(mistake: ReferenceScheduler.Mistake) async throws {
        let found = await onAThreadOfItsOwn { () -> (UInt64, ModelScenario, ModelRun.Divergence, String)? in
            var totals = ModelRun.Totals()
            for seed in UInt64(0)..<500 {
                let (scenario, failure) = ModelRun.generate(seed: seed, mistake: mistake, totals: &totals)
                // A sequence with series can need a few more operations to set up the ticks that show the mistake:
                // the bound on the shrunk length is for the others.
                guard let failure, !scenario.operations.contains(where: \.startsSeries) else { continue }
                let (shrunk, shrunkFailure) = ModelRun.shrink(scenario, failure: failure, mistake: mistake)
                let report = ModelRun.report(seed: seed, scenario: scenario, failure: failure, mistake: mistake)
                return (seed, shrunk, shrunkFailure, "\(scenario.operations.count)\n\(report)")
            }
            return nil
        }
        let (seed, shrunk, shrunkFailure, report) = try #require(found)
        #expect(shrunk.operations.count <= 4, "\(shrunk)")
        #expect(shrunkFailure.expected != shrunkFailure.actual)
        #expect(report.contains("seed \(seed)"))
        #expect(report.contains("TASKDISPATCH_MODEL_SEED=\(seed) TASKDISPATCH_MODEL_SEQUENCES=1"))
    }

    /// One hand-written sequence through the same comparison, as a shrunk failure would read.
    @Test func edgesOfTheClockAgreeWithTheReference() async {
        let scenario = ModelScenario(
            configuration: .init(mode: .manual, order: .priority, runawayLimit: 2, historyLimit: 2),
            operations: [
                .dispatch(.init(context: .background, priority: .utility, delay: .longest)),
                .dispatch(.init(context: .foreground, priority: .medium, delay: .nanoseconds(Int64.max))),
                .advanceBy(.longest),
                .dispatch(.init(context: .background, priority: .background, delay: .nanoseconds(1))),
                .dispatch(.init(context: .background, priority: .userInteractive, delay: .mostNegative)),
                .advanceTo(.nanoseconds(0)),
                .runNextForeground,
                .runNext,
                .cancel(task: 4),
                .cancel(task: 4),
                .cancel(task: 1),
                .verifyIdle,
                .runUntilIdle,
            ]
        )
        #expect(await onAThreadOfItsOwn { ModelRun.replay(scenario) } == nil)
    }

    /// A tracked task on the main actor and one on the global executor, stepped, drained and slept, as a shrunk
    /// failure would read.
    @Test func trackedTasksAgreeWithTheReference() async {
        let scenario = ModelScenario(
            configuration: .init(mode: .manual, order: .dispatch, runawayLimit: 100_000, historyLimit: 1_000),
            operations: [
                // t1, its start (foreground); t2, its background step; t3, its sleep's timer.
                .startTask(
                    .init(
                        isolation: .mainActor,
                        steps: [.background(.userInitiated, after: .nanoseconds(0)), .sleep(.nanoseconds(5))]
                    )
                ),
                .dispatch(.init(context: .background, priority: .utility, delay: .nanoseconds(5))),  // t4
                .runNextForeground,  // t1: the task now runs on the main actor, about to dispatch t2
                .runNextAsync(.background, waits: true),  // waits for t2, and runs it
                .settle,  // the task now sleeps until 5 ns
                // t5, its start (background); t6, its main-actor step; the sleep of zero dispatches nothing.
                .startTask(
                    .init(
                        isolation: .nonisolated, steps: [.mainActor(after: .nanoseconds(2)), .sleep(.nanoseconds(0))])
                ),
                .advanceByAsync(.nanoseconds(2)),  // t5 at 0 ns, t6 at 2 ns; the task finishes
                .verifyIdle,  // t4 and t3 are pending
                .runUntilIdleAsync,  // t4, then t3, at 5 ns
                .valueOf(task: 1),
                .verifyIdle,
            ]
        )
        #expect(await onAThreadOfItsOwn { ModelRun.replay(scenario) } == nil)
    }
}

extension ModelBasedTests {
    /// Two series ticking among one-off tasks and each other, one through a scope, stepped, advanced past several
    /// ticks, drained to idle (which stops at the jump to a tick), cancelled by handle and by `cancelAll()`, as a
    /// shrunk failure would read.
    @Test func seriesAndScopesAgreeWithTheReference() async {
        let scenario = ModelScenario(
            configuration: .init(
                mode: .manual, order: .dispatch, runawayLimit: 100_000, historyLimit: 1_000, scopes: 2),
            operations: [
                .dispatch(.init(context: .background, priority: .utility, delay: .nanoseconds(2))),  // t1, due at 2
                // t2: ticks at 0, 2, 4, …; through scopes[0].
                .startSeries(
                    .init(
                        context: .foreground, priority: .medium, interval: .nanoseconds(2), delay: .nanoseconds(0),
                        scope: 0)),
                // t3: ticks at 1, 4, 7, …
                .startSeries(
                    .init(
                        context: .background, priority: .userInitiated, interval: .nanoseconds(3),
                        delay: .nanoseconds(1), scope: nil)),
                .verifyIdle,  // pending: t2 due now, t1 and t3 later
                .runUntilIdle,  // t2 at 0, then stops at the jump to t3's tick at 1
                .advanceBy(.nanoseconds(4)),  // t3 at 1; t1, then t2, at 2; t3 (the older tick), then t2, at 4
                // t4, due at 6; t5, due now.
                .dispatch(.init(context: .background, priority: .background, delay: .nanoseconds(2), scope: 0)),
                .dispatch(.init(context: .foreground, priority: .medium, delay: .nanoseconds(0), scope: 1)),
                .cancelAll(scope: 0),  // stops t2 and cancels t4
                // t6, refused by the cancelled scope.
                .dispatch(.init(context: .foreground, priority: .medium, delay: .nanoseconds(0), scope: 0)),
                .cancel(task: 2),  // stopped already
                .advanceTo(.nanoseconds(10)),  // t5 at 4; t3 at 7 and 10
                .runUntilRunCount(12),  // t3 at 13, 16 and 19: not a drain to idle, it jumps to ticks
                .cancel(task: 3),
                .runUntilIdle,
                .verifyIdle,
            ]
        )
        let divergence = await onAThreadOfItsOwn { ModelRun.replay(scenario) }
        #expect(divergence == nil, "\(divergence.map { "after operation \($0.operation + 1): \($0)" } ?? "")")
    }
}

/// Runs `body` on a new thread and returns what it returns: the model's synchronous calls block that thread, and its
/// async calls wait there for tasks on the cooperative pool, whose threads it must not hold.
func onAThreadOfItsOwn<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.start()
    }
}
