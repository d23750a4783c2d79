import TaskDispatch

@testable import TaskDispatchTesting

/// One sequence run against both the reference and a dispatcher, compared after every operation.
final class ModelRun {
    /// Where the two sides first disagreed.
    struct Divergence: Equatable, CustomStringConvertible {
        /// The index of the operation after which they disagreed; the operation count for the final check.
        var operation: Int
        var expected: String
        var actual: String

        var description: String {
            "expected (reference): \(self.expected)\nactual (ManualDispatcher): \(self.actual)"
        }
    }

    /// What performing one operation came to.
    enum Outcome {
        case agreed
        case diverged(Divergence)
        /// The reference cannot predict the operation's outcome here (``ReferenceScheduler/admits(_:)``): the
        /// generator never chooses it; a shrunk sequence that comes to it does not count as failing.
        case inadmissible
    }

    struct Totals {
        var operations = 0
        /// The async steps and drains, and `value(of:)`.
        var asyncOperations = 0
        var trackedTasks = 0
        /// The operations that ran a tracked task's start or awaited task, or that came while a tracked task raced
        /// the test, compared on what the race cannot change.
        var racingOperations = 0
        var runs = 0
        /// The runs of tracked tasks' starts, awaitable dispatches and sleeps' timers.
        var trackedTaskRuns = 0
        var errors = 0
        var series = 0
        /// The runs of series' ticks.
        var tickRuns = 0
        /// The dispatches and series through a `DispatchScope`, and the scopes' `cancelAll()`.
        var scopeOperations = 0

        mutating func count(_ operation: ModelOperation) {
            self.operations += 1
            if operation.isAsync { self.asyncOperations += 1 }
            switch operation {
            case .startTask: self.trackedTasks += 1
            case .startSeries(let spec):
                self.series += 1
                if spec.scope != nil { self.scopeOperations += 1 }
            case .dispatch(let spec) where spec.scope != nil: self.scopeOperations += 1
            case .cancelAll: self.scopeOperations += 1
            default: break
            }
        }
    }

    var model: ReferenceScheduler
    let live: LiveDispatcher
    /// The operations compared on what a race cannot change.
    private(set) var racingOperations = 0

    init(_ configuration: ModelScenario.Configuration, mistake: ReferenceScheduler.Mistake? = nil) {
        self.model = ReferenceScheduler(configuration, mistake: mistake)
        self.live = LiveDispatcher(configuration)
    }

    /// Applies `operation` to both sides and compares what the reference can predict (see
    /// `ReferenceScheduler+TrackedTasks.swift`): everything in a settled stretch; at a settled point, the runs since
    /// the last one too, as a set.
    func perform(_ operation: ModelOperation, at index: Int) -> Outcome {
        guard self.model.admits(operation) else { return .inadmissible }
        let wasSettled = self.model.isSettled
        let actual = self.live.apply(operation)
        // A step's task may be a tracked task's start or timer, which no closure notes: its result names it.
        if operation.isStep, case .ran(let id) = actual.result {
            self.model.followedRuns = [id]
        } else {
            self.model.followedRuns = actual.ran
        }
        let applied = self.model.apply(operation)
        if let disallowed = self.model.disallowedChoice {
            return .diverged(Divergence(operation: index, expected: "a choice random order allows", actual: disallowed))
        }
        let checks = self.model.checks(
            after: operation, wasSettled: wasSettled, resumedTrackedTask: applied.resumedTrackedTask)
        if !wasSettled || applied.resumedTrackedTask { self.racingOperations += 1 }
        let pending = self.model.pendingTasks(learningFrom: actual.pending, keeping: checks.settledPoint)
        let expected = ModelObservation(
            result: applied.result,
            ran: applied.noted,
            now: .nanoseconds(self.model.now),
            pending: pending.map { task in
                ModelObservation.Pending(
                    task: task.id,
                    sequence: task.sequence,
                    context: task.context,
                    priority: task.context == .background ? task.priority : nil,
                    due: .nanoseconds(task.due),
                    interval: task.repeatInterval.map { .nanoseconds($0) }
                )
            },
            pendingCount: pending.count,
            pendingForegroundCount: pending.reduce(0) { $0 + ($1.context == .foreground ? 1 : 0) },
            unfinishedTasks: self.model.unfinishedTrackedCount,
            unsettledTasks: 0,
            scopes: self.model.scopeStates
        )
        var (expectedPart, actualPart) = (expected.keeping(checks), actual.keeping(checks))
        if self.model.sequenceGapsAllowed {
            expectedPart = expectedPart.rankingSequences()
            actualPart = actualPart.rankingSequences()
        }
        if expectedPart != actualPart {
            return .diverged(
                Divergence(operation: index, expected: expectedPart.description, actual: actualPart.description))
        }
        if checks.settledPoint {
            let expectedRuns = self.model.takeRunsSinceSettledPoint().map { LiveDispatcher.Run(task: $0, start: $1) }
            let actualRuns = self.live.takeRunsSinceSettledPoint()
            if expectedRuns.sorted() != actualRuns.sorted() {
                return .diverged(
                    Divergence(
                        operation: index,
                        expected: "runs since the last settled point \(expectedRuns.sorted())",
                        actual: "runs since the last settled point \(actualRuns.sorted())"
                    )
                )
            }
        }
        let violations = self.live.dispatcher.invariantViolations()
        if !violations.isEmpty {
            return .diverged(
                Divergence(
                    operation: index, expected: "no broken invariant", actual: violations.joined(separator: "; "))
            )
        }
        return .agreed
    }

    /// The end of a sequence: a last async drain if tracked tasks still race the test, the history against the
    /// reference's runs, then every task cancelled, which must leave nothing behind.
    func finish(at index: Int) -> Divergence? {
        if !self.model.isSettled, case .diverged(let divergence) = self.perform(.runUntilIdleAsync, at: index) {
            self.live.tearDown()
            return divergence
        }
        let history = self.historyDivergence(at: index)
        let leftovers = self.live.tearDown()
        if let history { return history }
        guard let leftovers else { return nil }
        return Divergence(operation: index, expected: "nothing left once every task is cancelled", actual: leftovers)
    }

    /// The history against the reference's runs: in order, unless tracked tasks raced the test, whose runs are
    /// compared in order only within a settled stretch; then as a set, when the history holds every run.
    private func historyDivergence(at index: Int) -> Divergence? {
        let expected = self.model.runs.map { "\(self.model.historyName($0.task)) at \($0.start)" }
        let actual = self.live.history
        let kept = Array(expected.suffix(self.model.historyLimit))
        if !self.model.hasRaced {
            guard kept == actual else {
                return Divergence(operation: index, expected: "history \(kept)", actual: "history \(actual)")
            }
            return nil
        }
        let expectedSet = kept.count == expected.count ? kept.sorted() : nil
        guard actual.count == kept.count, expectedSet.map({ $0 == actual.sorted() }) ?? true,
            actual.allSatisfy(Set(expected).contains)
        else {
            return Divergence(
                operation: index,
                expected: "history of \(kept.count) runs among \(expected.sorted())",
                actual: "history \(actual)"
            )
        }
        return nil
    }

    // MARK: - Generating, replaying, shrinking

    /// Generates a sequence from `seed`, choosing each operation from the reference's state, and runs it.
    static func generate(
        seed: UInt64,
        mistake: ReferenceScheduler.Mistake? = nil,
        totals: inout Totals
    ) -> (ModelScenario, Divergence?) {
        var generator = ModelGenerator(seed: seed)
        let configuration = generator.configuration()
        let run = ModelRun(configuration, mistake: mistake)
        var scenario = ModelScenario(configuration: configuration, operations: [])
        let length = 50 + generator.below(151)
        for index in 0...length {
            // The last operation lets the tracked tasks that still race the test catch up.
            guard index < length || !run.model.isSettled else { break }
            let operation =
                index < length ? generator.operation(for: run.model, configuration: configuration) : .runUntilIdleAsync
            scenario.operations.append(operation)
            totals.count(operation)
            let runsBefore = run.model.runs.count
            let outcome = run.perform(operation, at: index)
            totals.runs += run.model.runs.count - runsBefore
            switch outcome {
            case .agreed:
                continue
            case .diverged(let divergence):
                run.live.tearDown()
                return (scenario, divergence)
            case .inadmissible:
                run.live.tearDown()
                let divergence = Divergence(
                    operation: index, expected: "an operation the reference can predict", actual: "\(operation)")
                return (scenario, divergence)
            }
        }
        totals.errors += run.live.errors
        totals.racingOperations += run.racingOperations
        totals.trackedTaskRuns += run.model.runs.reduce(0) { $0 + (run.model.tasks[$1.task - 1].owner == nil ? 0 : 1) }
        totals.tickRuns += run.model.runs.reduce(0) {
            $0 + (run.model.tasks[$1.task - 1].repeatInterval == nil ? 0 : 1)
        }
        return (scenario, run.finish(at: scenario.operations.count))
    }

    /// Runs `scenario` and returns where the two sides first disagree, if they do.
    ///
    /// An operation the reference cannot predict where it comes is a failure of the scenario, except while
    /// shrinking (`shrinking`), where it means the candidate lost the drain that made it predictable: not failing.
    static func replay(
        _ scenario: ModelScenario,
        mistake: ReferenceScheduler.Mistake? = nil,
        shrinking: Bool = false
    ) -> Divergence? {
        let run = ModelRun(scenario.configuration, mistake: mistake)
        for (index, operation) in scenario.operations.enumerated() {
            switch run.perform(operation, at: index) {
            case .agreed:
                continue
            case .diverged(let divergence):
                run.live.tearDown()
                return divergence
            case .inadmissible:
                run.live.tearDown()
                guard !shrinking else { return nil }
                return Divergence(
                    operation: index, expected: "an operation the reference can predict", actual: "\(operation)")
            }
        }
        return run.finish(at: scenario.operations.count)
    }

    /// Removes operations while the sequence still fails (delta debugging: halves, then quarters, down to single
    /// operations), and drops the operations after the first divergence.
    static func shrink(
        _ scenario: ModelScenario,
        failure: Divergence,
        mistake: ReferenceScheduler.Mistake? = nil
    ) -> (ModelScenario, Divergence) {
        var current = scenario
        var failure = failure
        current.operations = Array(current.operations.prefix(failure.operation + 1))
        var chunk = max(1, current.operations.count / 2)
        while true {
            var index = 0
            var removed = false
            while index < current.operations.count {
                var candidate = current
                candidate.operations.removeSubrange(index..<min(index + chunk, candidate.operations.count))
                if let divergence = Self.replay(candidate, mistake: mistake, shrinking: true) {
                    candidate.operations = Array(candidate.operations.prefix(divergence.operation + 1))
                    current = candidate
                    failure = divergence
                    removed = true
                } else {
                    index += chunk
                }
            }
            if chunk == 1 && !removed { return (current, failure) }
            chunk = max(1, chunk / 2)
        }
    }

    /// The failure message: the seed, the shrunk sequence, what each side saw, and how to replay it.
    static func report(
        seed: UInt64,
        scenario: ModelScenario,
        failure: Divergence,
        mistake: ReferenceScheduler.Mistake? = nil
    ) -> String {
        let (shrunk, shrunkFailure) = Self.shrink(scenario, failure: failure, mistake: mistake)
        let step =
            shrunkFailure.operation < shrunk.operations.count
            ? "after operation \(shrunkFailure.operation + 1), \(shrunk.operations[shrunkFailure.operation])"
            : "at the end of the sequence"
        return """
            ManualDispatcher and the reference scheduler disagree on seed \(seed) (\(scenario.operations.count) \
            operations, shrunk to \(shrunk.operations.count)), \(step):
            \(shrunkFailure)
            Shrunk sequence (tasks are labeled t1, t2, … as they are dispatched or started by the test; a task's \
            children, and a tracked task's steps that dispatch, take the numbers right after it):
            \(shrunk)
            Replay: TASKDISPATCH_MODEL_SEED=\(seed) TASKDISPATCH_MODEL_SEQUENCES=1 swift test --filter ModelBasedTests
            """
    }
}
