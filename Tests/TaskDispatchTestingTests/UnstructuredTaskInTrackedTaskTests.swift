import TaskDispatch
import Testing

@testable import TaskDispatchTesting

/// A `Task { }` created inside a nonisolated tracked task inherits no task executor preference, so the dispatcher cannot
/// count its jobs: once it waits on the dispatcher, a drain that would move the clock or return throws, as it does for
/// a main-actor task's children, rather than let the clock pass a sibling that has not reached its sleep (as
/// swift-async-algorithms' debounce, merge and combineLatest, which each start one, would).
@Suite(.timeLimit(.minutes(1))) struct UnstructuredTaskInTrackedTaskTests {
    /// Where the `Task { }` comes from.
    enum Shape: CaseIterable, Sendable {
        /// One `Task { }` the body awaits with `task.value`.
        case awaitedTask
        /// One `Task { }` the body awaits through the dispatcher's `value(of:)`.
        case awaitedThroughTheDispatcher
        /// Two `Task { }`s, awaited one after the other.
        case twoTasks
        /// One `Task.immediate { }` the body awaits.
        case immediateTask
        /// An operator shaped as swift-async-algorithms' `merge`: a `Task { }` runs the upstreams in a task group and
        /// feeds a stream the body consumes.
        case mergeShape
    }

    @Test(arguments: Shape.allCases)
    func theAdvanceStops(shape: Shape) async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        for run in 0..<20 {
            let dispatcher = ManualDispatcher()
            let task = dispatcher.startTask(label: "dashboard") { @concurrent in
                try await Self.load(shape, dispatcher)
            }
            let summary = await dispatcher.expectAdvanceStopsAtZero(run: run)
            #expect(
                summary.hasPrefix(
                    "advance(by: 1 s) cannot know whether every task inside tracked task \"dashboard\" (TaskDispatchTestingTests/UnstructuredTaskInTrackedTaskTests.swift:"
                ), "run \(run): \(summary)")
            #expect(summary.contains("a Task { } or Task.immediate { } created inside it"), "run \(run)")
            #expect(summary.contains("Start that work with dispatcher.startTask"), "run \(run)")
            #expect(!dispatcher.history.contains { $0.task.label == "news" }, "run \(run)")
            task.cancel()
            if shape == .mergeShape {
                // The cancelled body's stream ends its loop instead of throwing.
                #expect(try await dispatcher.value(of: task) == [], "run \(run)")
            } else {
                await #expect(throws: CancellationError.self, "run \(run)") { try await dispatcher.value(of: task) }
            }
            try await dispatcher.settle()
            try dispatcher.verifyIdle()
        }
    }

    /// Auto-advance, where the tracked task's own sleep settles it before its `Task { }` first waits: the jump can
    /// pass that task (its fetch runs at 1 s, not 0), and the task can finish before another jump. Whichever came
    /// first, the test's `value(of:)` throws: the jump's error, or, once the task finished, the one it left.
    @Test func autoAdvanceReportsATaskThatFinishedAfterTheClockPassedItsTask() async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        for run in 0..<40 {
            let dispatcher = ManualDispatcher(mode: .autoAdvance)
            let task = dispatcher.startTask(label: "dashboard") { @concurrent in
                let news = Task { try await dispatcher.runInBackground(label: "news") { "news" } }
                try await dispatcher.clock.sleep(for: .seconds(1))
                return try await news.value
            }
            let error = await #expect(throws: ManualDispatcherError.self, "run \(run)") {
                try await dispatcher.value(of: task)
            }
            #expect(error?.kind == .unsettledTasks(after: .zero), "run \(run)")
            let summary = error?.summary ?? ""
            #expect(summary.contains("a Task { } or Task.immediate { } created inside it"), "run \(run)")
            if dispatcher.steps(labeled: ["news"]) == ["news@1.0 seconds"] {
                #expect(summary.contains("the clock may have passed that task, or a sibling,"), "run \(run)")
                #expect(summary.hasPrefix("value(of:) cannot know"), "run \(run)")
                #expect(
                    summary.contains("finished before any drain stopped for it, so this call reports it"), "run \(run)")
                #expect(!summary.contains("stops it too"), "run \(run)")
            }
            task.cancel()
            _ = try? await dispatcher.value(of: task)
        }
    }

    /// The same report, left by a task the test awaits only through another tracked task: the test's `value(of:)` of
    /// the outer task throws it, in every run.
    @Test func theValueOfAnOuterTaskThrowsTheReportOfATaskItAwaited() async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        for run in 0..<20 {
            let dispatcher = ManualDispatcher(mode: .autoAdvance)
            let screen = dispatcher.startTask(label: "screen") { @concurrent in
                let dashboard = dispatcher.startTask(label: "dashboard") { @concurrent in
                    let news = Task { try await dispatcher.runInBackground(label: "news") { "news" } }
                    try await dispatcher.clock.sleep(for: .seconds(1))
                    return try await news.value
                }
                return try await dispatcher.value(of: dashboard)
            }
            let error = await #expect(throws: ManualDispatcherError.self, "run \(run)") {
                try await dispatcher.value(of: screen)
            }
            #expect(error?.summary.contains("every task inside tracked task \"dashboard\"") == true, "run \(run)")
            screen.cancel()
            _ = try? await dispatcher.value(of: screen)
        }
    }

    /// A task that threw its own error gives it to the test's `value(of:)` first; its report waits for the next call.
    @Test func aTasksOwnErrorComesBeforeItsReport() async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        struct Offline: Error {}
        for run in 0..<20 {
            let dispatcher = ManualDispatcher(mode: .autoAdvance)
            let task = dispatcher.startTask(label: "dashboard") { @concurrent () async throws -> String in
                let news = Task { try await dispatcher.runInBackground(label: "news") { "news" } }
                try await dispatcher.clock.sleep(for: .seconds(1))
                _ = try await news.value
                throw Offline()
            }
            do {
                _ = try await dispatcher.value(of: task)
                Issue.record("run \(run): the task's value came with no error")
            } catch is Offline {
                // It finished: its report is the next call's.
                let error = #expect(throws: ManualDispatcherError.self, "run \(run)") { try dispatcher.verifyIdle() }
                #expect(error?.summary.hasPrefix("verifyIdle() cannot know whether every task inside") == true)
            } catch {
                // The jump's own report came first, with the task still asleep.
                #expect((error as? ManualDispatcherError)?.kind == .unsettledTasks(after: .zero), "run \(run)")
                task.cancel()
                _ = try? await dispatcher.value(of: task)
            }
        }
    }

    /// A `Task { }` created after the tracked task's own sleep ended, which waits once and ends with it inside one
    /// drain: its times were right, but the dispatcher cannot tell it from one created before the move, so one of the
    /// test's calls throws, in every run.
    @Test func aTaskCreatedAfterTheClockMovedIsReportedToo() async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        for run in 0..<20 {
            let dispatcher = ManualDispatcher()
            let task = dispatcher.startTask(label: "refresh") { @concurrent in
                try await dispatcher.clock.sleep(for: .seconds(5))
                let news = Task { try await dispatcher.runInBackground(label: "news") { "news" } }
                return try await news.value
            }
            let error = await #expect(throws: ManualDispatcherError.self, "run \(run)") {
                try await dispatcher.advance(by: .seconds(5))
                _ = try await dispatcher.value(of: task)
            }
            #expect(error?.kind == .unsettledTasks(after: .zero), "run \(run)")
            #expect(dispatcher.steps(labeled: ["news"]) == ["news@5.0 seconds"], "run \(run)")
            _ = try? await dispatcher.value(of: task)
            try dispatcher.verifyIdle()
        }
    }

    /// A task that finished after the clock moved leaves its report to the next call, whichever it is; with none, the
    /// dispatcher's release reports it (the engine's events, driven by hand: the order is otherwise a race).
    @Test func aReportNoCallTookIsInTheReleaseReport() {
        let registry = ManualDispatcherRegistry()
        do {
            let dispatcher: ManualDispatcher = registry.track { ManualDispatcher() }
            dispatcher.storage.update { schedule in
                let id = schedule.tracked.begin(
                    label: "dashboard", callSite: CallSite(fileID: "Feed/Feed.swift", line: 12),
                    childJobs: .uncountedInIsolatedTask)
                schedule.tracked.markStarted(id, at: 0)
                schedule.tracked.ownedWaitBegan(id, on: "a child's sleep", byAnotherTask: true)
                schedule.now = 1_000_000_000
                schedule.trackedTaskFinished(id, error: nil)
            }
        }
        let failures = registry.idleFailures()
        #expect(failures.count == 1)
        #expect(
            failures.first?.description.contains(
                "ManualDispatcher was deinitialized: The dispatcher's release cannot know whether every child task of tracked task \"dashboard\" (Feed/Feed.swift:12) has reached its wait"
            ) == true, "\(failures)")
    }

    /// Steps alone never move the clock: a `Task { }` that waited and finished with its tracked task leaves nothing
    /// for the next call to report.
    @Test func stepsThatNeverMoveTheClockReportNothingOnceTheTaskFinished() async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "dashboard") { @concurrent in
            let news = Task { try await dispatcher.runInBackground(label: "news") { "news" } }
            return try await news.value
        }
        try await dispatcher.runNextBackground()  // the start
        try await dispatcher.runNextBackground()  // the fetch
        #expect(try await dispatcher.value(of: task) == "news")
        try dispatcher.verifyIdle()
    }

    /// The advice, followed: the same work as `async let` children of the tracked task wakes at its times.
    @Test func theSameWorkAsChildTasksWakesAtItsTimes() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "dashboard") { @concurrent in
            async let news = Self.fetch("news", after: .seconds(1), dispatcher)
            async let weather = Self.fetch("weather", after: .seconds(2), dispatcher)
            return try await [news, weather]
        }
        try await dispatcher.advance(by: .seconds(1))
        #expect(dispatcher.steps() == ["news@1.0 seconds"])
        try await dispatcher.advance(by: .seconds(1))
        #expect(try await dispatcher.value(of: task) == ["news", "weather"])
        #expect(dispatcher.steps() == ["news@1.0 seconds", "weather@2.0 seconds"])
        try dispatcher.verifyIdle()
    }

    @Sendable private static func fetch(
        _ name: String, after delay: Duration, _ dispatcher: ManualDispatcher
    ) async throws -> String {
        try await dispatcher.clock.sleep(for: delay)
        return try await dispatcher.runInBackground(label: name) { name }
    }

    /// The dashboard's fetches, in `Task { }`s created inside the tracked task; the body itself never waits on the
    /// dispatcher before they do.
    private static func load(_ shape: Shape, _ dispatcher: ManualDispatcher) async throws -> [String] {
        switch shape {
        case .awaitedTask:
            let news = Task { try await fetch("news", after: .seconds(1), dispatcher) }
            return try await withTaskCancellationHandler {
                [try await news.value]
            } onCancel: {
                news.cancel()
            }
        case .awaitedThroughTheDispatcher:
            let news = Task { try await fetch("news", after: .seconds(1), dispatcher) }
            return try await withTaskCancellationHandler {
                [try await dispatcher.value(of: news)]
            } onCancel: {
                news.cancel()
            }
        case .twoTasks:
            let news = Task { try await fetch("news", after: .seconds(1), dispatcher) }
            let weather = Task { try await fetch("weather", after: .seconds(2), dispatcher) }
            return try await withTaskCancellationHandler {
                [try await news.value, try await weather.value]
            } onCancel: {
                news.cancel()
                weather.cancel()
            }
        case .immediateTask:
            guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else {
                return try await load(.awaitedTask, dispatcher)
            }
            let news = Task.immediate { try await fetch("news", after: .seconds(1), dispatcher) }
            return try await withTaskCancellationHandler {
                [try await news.value]
            } onCancel: {
                news.cancel()
            }
        case .mergeShape:
            let (stream, continuation) = AsyncThrowingStream.makeStream(of: String.self)
            let upstreams = Task {
                do {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask { continuation.yield(try await fetch("news", after: .seconds(1), dispatcher)) }
                        group.addTask {
                            continuation.yield(try await fetch("weather", after: .seconds(2), dispatcher))
                        }
                        try await group.waitForAll()
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            return try await withTaskCancellationHandler {
                try await stream.reduce(into: []) { $0.append($1) }
            } onCancel: {
                upstreams.cancel()
            }
        }
    }
}
