import Dispatch
import TaskDispatch
import TaskDispatchTesting
import TaskDispatchTestingTraits
import Testing

/// A tracked task cancelled at each point of its life, then an async drain or step, then the check: the check right
/// after the call sees every cancelled task ended, in every run (issue 33, item 1: the drain returned while a task
/// whose start it had cancelled was still on its way to its end, and `verifyIdle()` failed in most runs).
///
/// Each case repeats its scenario `runs` times, on the main actor or off it, in one mode, ending in one call. Its cases
/// run one at a time, beside the other suites: all at once, they flooded the main actor, and the other suites' tests
/// that need it within a real-time limit waited seconds for it.
@Suite(.serialized) struct CancelledTrackedTaskTests {
    /// 1,000 runs of each scenario at full scale; the sanitized run's scale takes a tenth.
    static let runs = StressScale.scaled(1_000)

    /// A `@MainActor` test: its tracked tasks are isolated to the main actor, as a main-actor model's are.
    @Test(.timeLimit(.minutes(2)), arguments: CancelScenario.all)
    @MainActor func onTheMainActor(_ scenario: CancelScenario) async throws {
        try await self.repeatScenario(scenario, testOnMainActor: true, tasksOnMainActor: true)
    }

    /// A nonisolated test, with nonisolated tracked tasks.
    @Test(.timeLimit(.minutes(2)), arguments: CancelScenario.all)
    func offTheMainActor(_ scenario: CancelScenario) async throws {
        try await self.repeatScenario(scenario, testOnMainActor: false, tasksOnMainActor: false)
    }

    /// A nonisolated test with main-actor tracked tasks: a task's body is enqueued on the main actor rather than begun
    /// at once, so a cancel finds it on its way to its start gate, its start still pending.
    @Test(.timeLimit(.minutes(2)), arguments: CancelScenario.all)
    func offTheMainActorWithMainActorTasks(_ scenario: CancelScenario) async throws {
        try await self.repeatScenario(scenario, testOnMainActor: false, tasksOnMainActor: true)
    }

    nonisolated(nonsending) private func repeatScenario(
        _ scenario: CancelScenario,
        testOnMainActor: Bool,
        tasksOnMainActor: Bool
    ) async throws {
        let test = try #require(Test.current)
        let clock = ContinuousClock()
        let started = clock.now
        var failures: [String] = []
        var failed = 0
        for run in 0..<Self.runs {
            do {
                if scenario.ending == .idleTrait {
                    // The trait checks at the end of its scope, as it does at the end of a test, on the test's actor.
                    if testOnMainActor {
                        try await IdleDispatchersTrait().provideScope(for: test, testCase: Test.Case.current) {
                            @MainActor in try await scenario.run(tasksOnMainActor: tasksOnMainActor)
                        }
                    } else {
                        try await IdleDispatchersTrait().provideScope(for: test, testCase: Test.Case.current) {
                            try await scenario.run(tasksOnMainActor: tasksOnMainActor)
                        }
                    }
                } else {
                    try await scenario.run(tasksOnMainActor: tasksOnMainActor)
                }
            } catch {
                failed += 1
                if failures.count < 3 { failures.append("run \(run): \(error)") }
            }
        }
        let milliseconds = (clock.now - started) / .milliseconds(1)
        #expect(failed == 0, "\(failed) of \(Self.runs) runs failed; the first: \(failures)")
        let isolation =
            testOnMainActor ? "on the main actor" : "off the main actor\(tasksOnMainActor ? ", main-actor tasks" : "")"
        print(
            "StressTests: cancelled tracked task, \(scenario), \(isolation): \(Self.runs) runs in \(Int(milliseconds)) ms"
        )
    }
}

/// One way to cancel a tracked task and then let it end, run as a test would write it.
struct CancelScenario: Sendable, CustomTestStringConvertible, CustomStringConvertible {
    /// Where the tracked task "task" stands when the test cancels it.
    enum Point: String, Sendable, CaseIterable {
        /// Its start is pending: the test cancels it at once.
        case beforeStart
        /// Its start has just run: a task dispatched right after the start, in the same context, cancels it.
        case duringStart
        /// It sleeps 1 s on the dispatcher's clock.
        case asleep
        /// It awaits `runInBackground(after: 1 s)`.
        case awaitingRunInBackground
        /// It awaits `runOnMainActor(after: 1 s)`.
        case awaitingRunOnMainActor
        /// It awaits, with `value(of:)`, tracked task "other", asleep; the test cancels both, "task" first.
        case awaitingValueOfAnother
    }

    /// What the test calls after the cancel.
    enum Ending: String, Sendable, CaseIterable {
        case runUntilIdle
        /// `advance(by: 500 ms)`: short of the 1 s waits, so only the cancel ends them.
        case advance
        case settle
        /// `runNextBackground()`, which runs "tick", dispatched before the cancel (or the start of a nonisolated
        /// task still pending); with the cancel in a task, `runNext()` twice, for the start and "cancel". In manual
        /// mode only: the other modes run those tasks at once. The check is that the cancelled tasks have ended.
        case runNext
        /// No call: the idle trait checks at the end of its scope. (When the cancel is a task's, the synchronous
        /// `runCurrent()` runs it first, which waits for nothing.)
        case idleTrait
    }

    let point: Point
    let mode: ManualDispatcher.Mode
    let ending: Ending

    static let all: [CancelScenario] = Point.allCases.flatMap { point in
        [ManualDispatcher.Mode.manual, .autoDrain, .autoAdvance].flatMap { mode in
            Ending.allCases.filter { $0 != .runNext || mode == .manual }.map { ending in
                CancelScenario(point: point, mode: mode, ending: ending)
            }
        }
    }

    var description: String {
        "\(self.point.rawValue), .\(self.mode), \(self.ending.rawValue)"
    }

    var testDescription: String {
        self.description
    }

    /// Runs the scenario once: throws what the dispatcher throws, or ``ScenarioFailure``.
    nonisolated(nonsending) func run(tasksOnMainActor onMainActor: Bool) async throws {
        let dispatcher = ManualDispatcher(mode: self.mode, waitLimit: .seconds(30))
        let clock = dispatcher.clock
        var cancel: [Task<Void, any Error>] = []
        switch self.point {
        case .beforeStart, .duringStart, .asleep:
            let task = Self.start(dispatcher, "task", onMainActor: onMainActor) {
                try await clock.sleep(for: .seconds(1))
            }
            if self.point == .duringStart {
                let cancelling: @Sendable () -> Void = { task.cancel() }
                if onMainActor {
                    dispatcher.foreground(label: "cancel") { cancelling() }
                } else {
                    dispatcher.background(label: "cancel", cancelling)
                }
            } else {
                cancel = [task]
            }
        case .awaitingRunInBackground:
            cancel = [
                Self.start(dispatcher, "task", onMainActor: onMainActor) {
                    try await dispatcher.runInBackground(after: .seconds(1), label: "work") {}
                }
            ]
        case .awaitingRunOnMainActor:
            cancel = [
                Self.start(dispatcher, "task", onMainActor: onMainActor) {
                    try await dispatcher.runOnMainActor(after: .seconds(1), label: "work") {}
                }
            ]
        case .awaitingValueOfAnother:
            let other = Self.start(dispatcher, "other", onMainActor: onMainActor) {
                try await clock.sleep(for: .seconds(1))
            }
            let task = Self.start(dispatcher, "task", onMainActor: onMainActor) {
                try await dispatcher.value(of: other)
                try await clock.sleep(for: .seconds(1))
            }
            cancel = [task, other]
        }
        if self.point != .beforeStart && self.point != .duringStart {
            try await dispatcher.settle()  // the task now waits at its point
            guard dispatcher.unsettledTaskCount == 0, dispatcher.unfinishedTaskCount == cancel.count else {
                throw ScenarioFailure("the tasks did not reach their point: \(dispatcher.pendingTasks)")
            }
        }
        if self.ending == .runNext, self.point != .duringStart {
            dispatcher.background(label: "tick") {}
        }
        for task in cancel { task.cancel() }
        switch self.ending {
        case .runUntilIdle: try await dispatcher.runUntilIdle()
        case .advance: try await dispatcher.advance(by: .milliseconds(500))
        case .settle: try await dispatcher.settle()
        case .runNext:
            if self.point == .duringStart {
                for _ in 0..<2 { try await dispatcher.runNext() }  // the start, then "cancel"
            } else {
                try await dispatcher.runNextBackground()  // "tick", or a nonisolated task's start if still pending
            }
            guard dispatcher.unfinishedTaskCount == 0 else {
                throw ScenarioFailure("the step returned before the cancelled tasks ended: \(dispatcher.pendingTasks)")
            }
            try await dispatcher.runUntilIdle()  // "tick", when the step ran a start that was still pending
        case .idleTrait:
            if self.mode == .manual, self.point == .duringStart { try dispatcher.runCurrent() }
            return
        }
        try dispatcher.verifyIdle()
    }

    /// A tracked task running `body`, isolated to the main actor or not, as `startTask` in such code makes it.
    private static func start(
        _ dispatcher: ManualDispatcher,
        _ label: String,
        onMainActor: Bool,
        _ body: nonisolated(nonsending) @escaping @Sendable () async throws -> Void
    ) -> Task<Void, any Error> {
        if onMainActor {
            return dispatcher.startTask(label: label) { @MainActor in try await body() }
        }
        return dispatcher.startTask(label: label) { @concurrent in try await body() }
    }
}

/// A scenario that went wrong in a way the dispatcher did not report.
struct ScenarioFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
