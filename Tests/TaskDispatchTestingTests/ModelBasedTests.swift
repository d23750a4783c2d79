import Foundation
import TaskDispatch
import Testing

@testable import TaskDispatchTesting

/// `ManualDispatcher` against ``ReferenceScheduler``, an obviously correct model of it, over 700 random
/// operation sequences: after every operation, the two must agree on what the call returned or threw, which tasks
/// ran and in what order, the clock, and the pending list; and the dispatcher's invariants must hold.
///
/// A failure names its seed and prints the sequence shrunk to the operations that still fail. The environment
/// scales it up: `TASKDISPATCH_MODEL_SEQUENCES=1000000 swift test --filter ModelBasedTests` runs a million
/// sequences; `TASKDISPATCH_MODEL_SEED=n` starts at seed `n` (with `TASKDISPATCH_MODEL_SEQUENCES=1`, replays it).
@Suite struct ModelBasedTests {
    /// Sequences in a normal `swift test` run.
    static let defaultSequences = 700

    /// On a thread of its own: neither the main actor nor a thread of the cooperative pool is held for the seconds
    /// it runs (the other suites need both: their async waits have real-time limits), and foreground tasks hop to
    /// the main queue one at a time.
    @Test func theDispatcherAgreesWithTheReferenceOnRandomSequences() async {
        let environment = ProcessInfo.processInfo.environment
        let sequences = environment["TASKDISPATCH_MODEL_SEQUENCES"].flatMap(Int.init) ?? Self.defaultSequences
        let firstSeed = environment["TASKDISPATCH_MODEL_SEED"].flatMap(UInt64.init) ?? 0
        let outcome = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Self.run(sequences, from: firstSeed))
            }
            thread.start()
        }
        if let failure = outcome.failure {
            Issue.record(Comment(rawValue: failure))
            return
        }
        let totals = outcome.totals
        print(
            "Model-based test: \(sequences) sequences (seeds \(firstSeed)..<\(firstSeed &+ UInt64(sequences))), \(totals.operations) operations, \(totals.runs) task runs, \(totals.errors) thrown errors, compared with the reference scheduler in \(outcome.elapsed)"
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

    /// The comparison can fail: a reference that forgets priorities, or that allows random order fewer choices than
    /// it has, is caught, and its sequence shrinks to the few operations that show the difference.
    @Test(arguments: [ReferenceScheduler.Mistake.ignoresPriority, .narrowsRandomOrder])
    func aWrongReferenceIsCaughtAndItsSequenceShrunk(mistake: ReferenceScheduler.Mistake) throws {
        var totals = ModelRun.Totals()
        var found: (seed: UInt64, scenario: ModelScenario, failure: ModelRun.Divergence)?
        for seed in UInt64(0)..<500 {
            let (scenario, failure) = ModelRun.generate(seed: seed, mistake: mistake, totals: &totals)
            if let failure {
                found = (seed, scenario, failure)
                break
            }
        }
        let (seed, scenario, failure) = try #require(found)
        let (shrunk, shrunkFailure) = ModelRun.shrink(scenario, failure: failure, mistake: mistake)
        #expect(shrunk.operations.count < scenario.operations.count)
        #expect(shrunk.operations.count <= 4, "\(shrunk)")
        #expect(shrunkFailure.expected != shrunkFailure.actual)
        let report = ModelRun.report(seed: seed, scenario: scenario, failure: failure, mistake: mistake)
        #expect(report.contains("seed \(seed)"))
        #expect(report.contains("TASKDISPATCH_MODEL_SEED=\(seed) TASKDISPATCH_MODEL_SEQUENCES=1"))
    }

    /// One hand-written sequence through the same comparison, as a shrunk failure would read.
    @Test func edgesOfTheClockAgreeWithTheReference() {
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
        #expect(ModelRun.replay(scenario) == nil)
    }
}

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

    struct Totals {
        var operations = 0
        var runs = 0
        var errors = 0
    }

    var model: ReferenceScheduler
    let live: LiveDispatcher

    init(_ configuration: ModelScenario.Configuration, mistake: ReferenceScheduler.Mistake? = nil) {
        self.model = ReferenceScheduler(configuration, mistake: mistake)
        self.live = LiveDispatcher(configuration)
    }

    /// Applies `operation` to both sides and compares them.
    func perform(_ operation: ModelOperation, at index: Int) -> Divergence? {
        let actual = self.live.apply(operation)
        self.model.followedRuns = actual.ran
        let (expectedResult, expectedRuns) = self.model.apply(operation)
        if let disallowed = self.model.disallowedChoice {
            return Divergence(operation: index, expected: "a choice random order allows", actual: disallowed)
        }
        let pending = self.model.pending
        let expected = ModelObservation(
            result: expectedResult,
            ran: expectedRuns,
            now: .nanoseconds(self.model.now),
            pending: pending.map { task in
                ModelObservation.Pending(
                    task: task.id,
                    sequence: task.sequence,
                    context: task.spec.context,
                    priority: task.spec.context == .background ? task.spec.priority : nil,
                    due: .nanoseconds(task.due)
                )
            },
            pendingCount: pending.count,
            pendingForegroundCount: pending.reduce(0) { $0 + ($1.spec.context == .foreground ? 1 : 0) }
        )
        if expected != actual {
            return Divergence(operation: index, expected: expected.description, actual: actual.description)
        }
        let violations = self.live.dispatcher.invariantViolations()
        if !violations.isEmpty {
            return Divergence(
                operation: index, expected: "no broken invariant", actual: violations.joined(separator: "; "))
        }
        return nil
    }

    /// The end of a sequence: the history against the reference's runs, then every pending task cancelled so the
    /// dispatcher goes away quietly.
    func finish(at index: Int) -> Divergence? {
        defer { self.live.tearDown() }
        let expected = self.model.runs.suffix(self.model.historyLimit).map { "t\($0.task) at \($0.start)" }
        let actual = self.live.dispatcher.history.map { "\($0.task.label ?? "?") at \(nanoseconds($0.startTime))" }
        guard expected == actual else {
            return Divergence(operation: index, expected: "history \(expected)", actual: "history \(actual)")
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
        for index in 0..<length {
            let operation = generator.operation(for: run.model, configuration: configuration)
            scenario.operations.append(operation)
            totals.operations += 1
            let runsBefore = run.model.runs.count
            let divergence = run.perform(operation, at: index)
            totals.runs += run.model.runs.count - runsBefore
            if let divergence {
                run.live.tearDown()
                return (scenario, divergence)
            }
        }
        totals.errors += run.live.errors
        return (scenario, run.finish(at: length))
    }

    /// Runs `scenario` and returns where the two sides first disagree, if they do.
    static func replay(_ scenario: ModelScenario, mistake: ReferenceScheduler.Mistake? = nil) -> Divergence? {
        let run = ModelRun(scenario.configuration, mistake: mistake)
        for (index, operation) in scenario.operations.enumerated() {
            if let divergence = run.perform(operation, at: index) {
                run.live.tearDown()
                return divergence
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
                if let divergence = Self.replay(candidate, mistake: mistake) {
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
            Shrunk sequence (tasks are labeled t1, t2, … in dispatch order):
            \(shrunk)
            Replay: TASKDISPATCH_MODEL_SEED=\(seed) TASKDISPATCH_MODEL_SEQUENCES=1 swift test --filter ModelBasedTests
            """
    }
}

/// The dispatcher side of a ``ModelRun``: a `ManualDispatcher` driven with the operations of a scenario, its tasks
/// labeled by model identity, and what ran.
///
/// `@unchecked Sendable`: its state is touched by the test's thread and by the tasks the dispatcher runs, never at
/// the same time. A background task runs on the thread that called the run method (the test's); a foreground task
/// runs on the main queue while that thread waits for it in `DispatchQueue.main.sync`, which orders the accesses.
final class LiveDispatcher: @unchecked Sendable {
    let dispatcher: ManualDispatcher
    /// The tasks that ran, in order.
    private(set) var ran: [Int] = []
    /// The handle of task `n` at index `n - 1`.
    private var handles: [TaskHandle] = []
    /// The number of errors the dispatcher threw.
    private(set) var errors = 0

    init(_ configuration: ModelScenario.Configuration) {
        self.dispatcher = ManualDispatcher(
            mode: configuration.mode,
            order: configuration.order,
            runawayLimit: configuration.runawayLimit,
            historyLimit: configuration.historyLimit
        )
    }

    func apply(_ operation: ModelOperation) -> ModelObservation {
        let runsBefore = self.ran.count
        let result: ModelObservation.Result
        do throws(ManualDispatcherError) {
            result = try self.perform(operation)
        } catch {
            self.errors += 1
            result = .failed(error.kind)
        }
        return ModelObservation(
            result: result,
            ran: Array(self.ran[runsBefore...]),
            now: self.dispatcher.now,
            pending: self.dispatcher.pendingTasks.map { task in
                ModelObservation.Pending(
                    task: Self.id(task.label),
                    sequence: task.sequence,
                    context: task.context,
                    priority: task.context == .background ? task.priority : nil,
                    due: task.dueTime
                )
            },
            pendingCount: self.dispatcher.pendingTaskCount,
            pendingForegroundCount: self.dispatcher.pendingTaskCount(in: .foreground)
        )
    }

    private func perform(_ operation: ModelOperation) throws(ManualDispatcherError) -> ModelObservation.Result {
        switch operation {
        case .dispatch(let spec):
            self.dispatch(spec)
            return .nothing
        case .cancel(let id):
            guard self.handles.indices.contains(id - 1) else { return .nothing }
            return .cancelled(self.handles[id - 1].cancel())
        case .runNextForeground:
            return .ran(Self.id(try self.dispatcher.runNextForeground().task.label))
        case .runNextBackground:
            return .ran(Self.id(try self.dispatcher.runNextBackground().task.label))
        case .runNext:
            return .ran(Self.id(try self.dispatcher.runNext().task.label))
        case .runCurrent:
            return .count(try self.dispatcher.runCurrent())
        case .runUntilIdle:
            return .count(try self.dispatcher.runUntilIdle())
        case .advanceBy(let duration):
            return .count(try self.dispatcher.advance(by: duration.duration))
        case .advanceTo(let time):
            return .count(try self.dispatcher.advance(to: time.duration))
        case .runUntilTaskLabeled(let id):
            return .ran(Self.id(try self.dispatcher.run(untilTaskLabeled: "t\(id)").task.label))
        case .runUntilRunCount(let wanted):
            return .count(try self.dispatcher.run(until: { self.ran.count >= wanted }))
        case .verifyIdle:
            try self.dispatcher.verifyIdle()
            return .nothing
        case .setMode(let mode):
            self.dispatcher.mode = mode
            return .nothing
        case .setOrder(let order):
            self.dispatcher.order = order
            return .nothing
        }
    }

    /// Dispatches `spec` as task `tn`, the next model identity; when it runs, it notes its run and dispatches its
    /// children.
    private func dispatch(_ spec: ModelTaskSpec) {
        let id = self.handles.count + 1
        let label = "t\(id)"
        let children = spec.children
        let cancels = spec.cancels
        // Reserve the slot first: an auto-drain may run the task, and the tasks it dispatches, before this returns.
        self.handles.append(TaskHandle(canceller: NoCanceller()))
        let handle =
            switch spec.context {
            case .background:
                self.dispatcher.background(priority: spec.priority, after: spec.delay.duration, label: label) {
                    self.taskRan(id, cancelling: cancels, children: children)
                }
            case .foreground:
                self.dispatcher.foreground(after: spec.delay.duration, label: label) {
                    self.taskRan(id, cancelling: cancels, children: children)
                }
            }
        self.handles[id - 1] = handle
    }

    private func taskRan(_ id: Int, cancelling target: Int?, children: [ModelTaskSpec]) {
        self.ran.append(id)
        if let target, self.handles.indices.contains(target - 1) { self.handles[target - 1].cancel() }
        for child in children { self.dispatch(child) }
    }

    /// Cancels every task still pending, which releases their closures (they hold this object) and lets the
    /// dispatcher go without reporting them.
    func tearDown() {
        for handle in self.handles { handle.cancel() }
        self.handles = []
    }

    /// The model identity in a label `tn`; -1 for any other label. (A loop over the bytes: the generic parse of
    /// `Int(label.dropFirst())` was a tenth of the test's time in a debug build.)
    private static func id(_ label: String?) -> Int {
        guard let label else { return -1 }
        var id = 0
        var bytes = label.utf8.makeIterator()
        guard bytes.next() == UInt8(ascii: "t") else { return -1 }
        while let byte = bytes.next() {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return -1 }
            id = id * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return id
    }
}

/// The placeholder handle of a task whose dispatch has not returned yet.
private struct NoCanceller: TaskCancelling {
    func cancelTask() -> Bool { false }
    var isTaskCancelled: Bool { false }
}
