import TaskDispatch
import TaskDispatchTesting
import Testing

/// A child's work in the fan-out cases: sleeps `delay` on the dispatcher's clock, then dispatches its step `name`.
@concurrent private func sleepThenStep(
    _ dispatcher: ManualDispatcher, _ name: String, after delay: Duration
) async throws -> String {
    try await dispatcher.clock.sleep(for: delay)
    return try await dispatcher.runInBackground(label: name) { name }
}

/// Nonisolated tracked tasks whose child tasks (`async let`, task groups) run at the same time: the drains move the
/// clock only when no part of the task runs, so a child that has not reached its first wait yet is not skipped past.
/// From a main-actor test, the operations are `@concurrent`, as the recipes article advises for a race.
///
/// Each case repeats: before the tracked task's jobs were counted, a sibling that started after another had waited
/// read a later time in most runs, but not in all.
@Suite @MainActor struct ChildTaskSettlingTests {
    private struct TimedOut: Error {}

    /// The operation's value, or `TimedOut` when the dispatcher's clock passes `limit` first: a task group racing
    /// the operation against a sleep, as the recipes article writes it. Off the main actor, as a free function is:
    /// a member of this main-actor suite would otherwise run the group on the main actor.
    @concurrent private nonisolated static func withTimeout<Value: Sendable>(
        _ limit: Duration,
        on dispatcher: any TaskDispatcher,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        try await withThrowingTaskGroup(of: Value.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await dispatcher.clock.sleep(for: limit)
                throw TimedOut()
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }

    private static let runs = 40

    /// A tracked "load" that races a fetch against a 5 s timeout, from a `@concurrent` operation, as the recipes
    /// article writes it.
    private static func startLoad(
        _ dispatcher: ManualDispatcher, fetch label: String, after delay: Duration, giving value: String
    ) -> Task<String, any Error> {
        dispatcher.startTask(label: "load") { @concurrent in
            try await Self.withTimeout(.seconds(5), on: dispatcher) {
                try await dispatcher.runInBackground(after: delay, label: label) { value }
            }
        }
    }

    @Test func aTimeoutRacedInATaskGroupWinsAtItsTimeInAutoAdvance() async throws {
        for run in 0..<Self.runs {
            let dispatcher = ManualDispatcher(mode: .autoAdvance, waitLimit: .seconds(60))
            let task = Self.startLoad(dispatcher, fetch: "slow fetch", after: .seconds(10), giving: "late")
            await #expect(throws: TimedOut.self, "run \(run)") { try await dispatcher.value(of: task) }
            #expect(dispatcher.now == .seconds(5), "run \(run)")
            try await dispatcher.runUntilIdle()
            try dispatcher.verifyIdle()
        }
    }

    /// In manual mode the test moves the clock: the timeout fires at 5 s, inside the advance, and the test claims
    /// the error after it.
    @Test func aTimeoutRacedInATaskGroupWinsWhenTheTestAdvancesToIt() async throws {
        for run in 0..<Self.runs {
            let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
            let task = Self.startLoad(dispatcher, fetch: "slow fetch", after: .seconds(10), giving: "late")
            try await dispatcher.advance(by: .seconds(5))
            #expect(dispatcher.now == .seconds(5), "run \(run)")
            #expect(dispatcher.pendingTaskCount == 0, "run \(run): the slow fetch was cancelled with its child")
            await #expect(throws: TimedOut.self, "run \(run)") { try await dispatcher.value(of: task) }
            try dispatcher.verifyIdle()
        }
    }

    @Test func theWorkWinsARaceItFinishesFirst() async throws {
        for run in 0..<Self.runs {
            let dispatcher = ManualDispatcher(mode: .autoAdvance, waitLimit: .seconds(60))
            let task = Self.startLoad(dispatcher, fetch: "fetch", after: .seconds(2), giving: "in time")
            #expect(try await dispatcher.value(of: task) == "in time", "run \(run)")
            #expect(dispatcher.now == .seconds(2), "run \(run)")
        }
    }

    /// Three `async let` children sleep 100 ms, 1 s and 2 s before each dispatches its step: each step runs at its
    /// child's time, whichever child the runtime starts first.
    @Test func asyncLetChildrenEachRunAtTheirOwnTime() async throws {
        for run in 0..<Self.runs {
            let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
            let task = dispatcher.startTask(label: "dashboard") { @concurrent () async throws -> [String] in
                async let items = sleepThenStep(dispatcher, "items", after: .milliseconds(100))
                async let profile = sleepThenStep(dispatcher, "profile", after: .seconds(1))
                async let badges = sleepThenStep(dispatcher, "badges", after: .seconds(2))
                return try await [items, profile, badges]
            }
            try await dispatcher.advance(by: .milliseconds(100))
            #expect(dispatcher.history.map(\.task.label).contains("items"), "run \(run)")
            try await dispatcher.advance(to: .seconds(1))
            #expect(dispatcher.history.map(\.task.label).contains("profile"), "run \(run)")
            #expect(!dispatcher.history.map(\.task.label).contains("badges"), "run \(run)")
            try await dispatcher.advance(to: .seconds(2))
            #expect(try await dispatcher.value(of: task) == ["items", "profile", "badges"], "run \(run)")
            let times = dispatcher.history.filter { ["items", "profile", "badges"].contains($0.task.label) }
                .map(\.startTime)
            #expect(times == [.milliseconds(100), .seconds(1), .seconds(2)], "run \(run)")
            try dispatcher.verifyIdle()
        }
    }
}

/// The same races in a tracked task off the main actor: its own jobs are counted too.
@Suite struct ChildTaskSettlingOffTheMainActorTests {
    private struct TimedOut: Error {}

    @Test func aTimeoutRacedInATaskGroupWinsAtItsTimeInAutoAdvance() async throws {
        for run in 0..<40 {
            let dispatcher = ManualDispatcher(mode: .autoAdvance, waitLimit: .seconds(60))
            let task = dispatcher.startTask(label: "load") { () async throws -> String in
                try await withThrowingTaskGroup(of: String.self) { group in
                    group.addTask {
                        try await dispatcher.runInBackground(after: .seconds(10), label: "slow fetch") { "late" }
                    }
                    group.addTask {
                        try await dispatcher.clock.sleep(for: .seconds(5))
                        throw TimedOut()
                    }
                    defer { group.cancelAll() }
                    guard let first = try await group.next() else { throw CancellationError() }
                    return first
                }
            }
            await #expect(throws: TimedOut.self, "run \(run)") { try await dispatcher.value(of: task) }
            #expect(dispatcher.now == .seconds(5), "run \(run)")
        }
    }

    /// Each `async let` child sleeps, then its step: the steps run in the order of their times.
    @Test func asyncLetChildrenEachRunAtTheirOwnTime() async throws {
        for run in 0..<40 {
            let dispatcher = ManualDispatcher(mode: .autoAdvance, waitLimit: .seconds(60))
            let task = dispatcher.startTask(label: "fan-out") { () async throws -> [String] in
                async let late = sleepThenStep(dispatcher, "late", after: .seconds(3))
                async let early = sleepThenStep(dispatcher, "early", after: .seconds(1))
                async let middle = sleepThenStep(dispatcher, "middle", after: .seconds(2))
                return try await [early, middle, late]
            }
            #expect(try await dispatcher.value(of: task) == ["early", "middle", "late"], "run \(run)")
            let steps = dispatcher.history.filter { ["early", "middle", "late"].contains($0.task.label) }
            #expect(steps.map(\.task.label) == ["early", "middle", "late"], "run \(run)")
            #expect(steps.map(\.startTime) == [.seconds(1), .seconds(2), .seconds(3)], "run \(run)")
        }
    }

    /// Two children await two tracked tasks' values at once with `value(of:)`: both awaits are recorded, so the
    /// task settles while both wait, and the end of the first does not hide the second (before, the second drain
    /// read the task as unsettled and waited out its limit).
    @Test(arguments: [false, true])
    func twoChildrenAwaitTwoTrackedTasksAtOnce(autoAdvance: Bool) async throws {
        for run in 0..<20 {
            let dispatcher = ManualDispatcher(mode: autoAdvance ? .autoAdvance : .manual, waitLimit: .seconds(60))
            let first = dispatcher.startTask(label: "first") { () async throws -> Int in
                try await dispatcher.clock.sleep(for: .seconds(1))
                return 1
            }
            let second = dispatcher.startTask(label: "second") { () async throws -> Int in
                try await dispatcher.clock.sleep(for: .seconds(2))
                return 2
            }
            let both = dispatcher.startTask(label: "both") { () async throws -> Int in
                async let one = dispatcher.value(of: first)
                async let two = dispatcher.value(of: second)
                return try await one + two
            }
            if !autoAdvance { try await dispatcher.runUntilIdle() }
            #expect(try await dispatcher.value(of: both) == 3, "run \(run)")
            #expect(dispatcher.now == .seconds(2), "run \(run)")
            try dispatcher.verifyIdle()
        }
    }
}
