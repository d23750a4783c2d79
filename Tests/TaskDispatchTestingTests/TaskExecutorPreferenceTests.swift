import TaskDispatch
import TaskDispatchTesting
import Testing

/// Where a task executor preference of the code's own sends a nonisolated tracked task's child tasks, the dispatcher
/// cannot count their jobs: once one of them waits on the dispatcher, a drain that would move the clock or return
/// throws, naming the preference, as it does for a main-actor task's children. Before, `advance(by: 1 s)` moved the
/// clock past a sibling that had not reached its sleep, silently, in most runs (a probe: 12 to 20 runs in 20).
@Suite(.timeLimit(.minutes(1))) struct TaskExecutorPreferenceTests {
    /// How the children come under the preference.
    enum Shape: CaseIterable, Sendable {
        /// `async let` children inside `withTaskExecutorPreference`.
        case asyncLetInsideThePreference
        /// A task group's children added with `addTask(executorPreference:)`.
        case groupChildrenWithAPreference
        /// One `async let` child inside `withTaskExecutorPreference` that awaits another tracked task's value.
        case childAwaitingATrackedTask
        /// One `async let` child inside `withTaskExecutorPreference`, awaited before a second: the records cannot tell
        /// that it has no sibling.
        case childrenOneAfterAnother
    }

    /// The executor the children prefer.
    enum Preferred: CaseIterable, Sendable {
        case globalConcurrentExecutor, serialQueue
    }

    @Test(arguments: Shape.allCases, Preferred.allCases)
    func theAdvanceStops(shape: Shape, preferred: Preferred) async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let executor: any TaskExecutor =
            switch preferred {
            case .globalConcurrentExecutor: globalConcurrentExecutor
            case .serialQueue: SerialQueueTaskExecutor()
            }
        for run in 0..<20 {
            let dispatcher = ManualDispatcher()
            let task = dispatcher.startTask(label: "dashboard") { @concurrent in
                try await Self.load(shape, preferring: executor, dispatcher)
            }
            let summary = await dispatcher.expectAdvanceStopsAtZero(run: run)
            #expect(
                summary.hasPrefix(
                    "advance(by: 1 s) cannot know whether every child task of tracked task \"dashboard\" (TaskDispatchTestingTests/TaskExecutorPreferenceTests.swift:"
                ), "run \(run): \(summary)")
            #expect(summary.contains("from under a task executor preference of its own"), "run \(run)")
            #expect(summary.contains("Leave the preference out of the task's children"), "run \(run)")
            #expect(!dispatcher.history.contains { $0.task.label == "news" }, "run \(run)")
            task.cancel()
            await #expect(throws: CancellationError.self, "run \(run)") { try await dispatcher.value(of: task) }
            try dispatcher.verifyIdle()
        }
    }

    /// The tracked task's own body under a preference has no child to miss: its sleeps wake at their times.
    @Test(arguments: Preferred.allCases)
    func aTaskWhoseOwnBodyPrefersAnExecutorIsNotStopped(preferred: Preferred) async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let executor: any TaskExecutor =
            switch preferred {
            case .globalConcurrentExecutor: globalConcurrentExecutor
            case .serialQueue: SerialQueueTaskExecutor()
            }
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "one by one") { @concurrent in
            try await withTaskExecutorPreference(executor) {
                try await dispatcher.clock.sleep(for: .seconds(1))
                try await dispatcher.runInBackground(label: "news") {}
                try await dispatcher.clock.sleep(for: .seconds(2))
                try await dispatcher.runInBackground(label: "weather") {}
            }
        }
        try await dispatcher.advance(by: .seconds(1))
        #expect(dispatcher.steps() == ["news@1.0 seconds"])
        try await dispatcher.advance(by: .seconds(2))
        try await dispatcher.value(of: task)
        #expect(dispatcher.steps() == ["news@1.0 seconds", "weather@3.0 seconds"])
        try dispatcher.verifyIdle()
    }

    /// The children of the dashboard, each sleeping on the dispatcher's clock, under `executor`.
    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
    private static func load(
        _ shape: Shape, preferring executor: any TaskExecutor, _ dispatcher: ManualDispatcher
    ) async throws -> [String] {
        @Sendable func fetch(_ name: String, after delay: Duration) async throws -> String {
            try await dispatcher.clock.sleep(for: delay)
            return try await dispatcher.runInBackground(label: name) { name }
        }
        switch shape {
        case .asyncLetInsideThePreference:
            return try await withTaskExecutorPreference(executor) {
                async let news = fetch("news", after: .seconds(1))
                async let weather = fetch("weather", after: .seconds(2))
                return try await [news, weather]
            }
        case .groupChildrenWithAPreference:
            return try await withThrowingTaskGroup(of: String.self) { group in
                group.addTask(executorPreference: executor) { try await fetch("news", after: .seconds(1)) }
                group.addTask(executorPreference: executor) { try await fetch("weather", after: .seconds(2)) }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        case .childrenOneAfterAnother:
            return try await withTaskExecutorPreference(executor) {
                async let first = fetch("news", after: .seconds(1))
                let news = try await first
                async let second = fetch("weather", after: .seconds(1))
                return try await [news, second]
            }
        case .childAwaitingATrackedTask:
            let source = dispatcher.startTask(label: "source") { try await fetch("news", after: .seconds(1)) }
            return try await withTaskCancellationHandler {
                try await withTaskExecutorPreference(executor) {
                    async let news = dispatcher.value(of: source)
                    return try await [news]
                }
            } onCancel: {
                source.cancel()
            }
        }
    }
}
