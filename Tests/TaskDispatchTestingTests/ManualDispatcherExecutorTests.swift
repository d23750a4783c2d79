import TaskDispatch
import TaskDispatchTesting
import Testing

/// The task executor needs macOS 15 / iOS 18 on Apple platforms; each test returns at once before that.
@Suite struct ManualDispatcherExecutorTests {
    @Test func aJobOnTheTaskExecutorIsABackgroundTaskThatRunsWhenStepped() async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let dispatcher = ManualDispatcher()
        let task = Task(executorPreference: dispatcher.taskExecutor) { 6 * 7 }
        #expect(dispatcher.pendingTasks.map(\.label) == ["task executor job"])
        #expect(dispatcher.pendingTaskCount(in: .background) == 1)
        try await dispatcher.runNextBackground()
        #expect(await task.value == 42)
        try dispatcher.verifyIdle()
    }

    @Test func theDispatcherHasOneTaskExecutor() {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let dispatcher = ManualDispatcher()
        #expect(dispatcher.taskExecutor === dispatcher.taskExecutor)
    }

    @Test func eachResumptionIsAStepAndTheCodeBetweenAwaitsRunsInsideIt() async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        let task = Task(executorPreference: dispatcher.taskExecutor) { () async throws -> Int in
            log.record("begin")
            let value = try await dispatcher.runInBackground(label: "work") { 1 }
            log.record("after work")
            return value
        }
        try await dispatcher.runNextBackground()  // the first job: runs to the await, dispatches "work"
        #expect(log.events == ["begin"])
        #expect(dispatcher.pendingTasks.map(\.label) == ["work"])
        try await dispatcher.runNextBackground()  // "work": resumes the task, which enqueues its next job
        #expect(dispatcher.pendingTasks.map(\.label) == ["task executor job"])
        #expect(log.events == ["begin"])
        try await dispatcher.runNextBackground()  // the rest of the task
        #expect(log.events == ["begin", "after work"])
        #expect(try await task.value == 1)
    }

    /// Done-when scenario: a chain of three awaits through the executor, drained in order, 200 times in parallel.
    @Test(arguments: 0..<200) func aChainOfThreeAwaitsDrainsInOrder(repetition: Int) async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let dispatcher = ManualDispatcher()
        dispatcher.prefersTaskExecutorForTrackedTasks = true  // opt in: steps as executor jobs
        let task = dispatcher.startTask(label: "chain") { () async throws -> Int in
            let a = try await dispatcher.runInBackground(label: "a") { 1 }
            let b = try await dispatcher.runInBackground(label: "b") { a + 1 }
            return try await dispatcher.runInBackground(label: "c") { b + 1 }
        }
        #expect(try await dispatcher.runUntilIdle() == 8)
        let job = "task executor job"
        #expect(dispatcher.history.map(\.task.label) == ["chain", job, "a", job, "b", job, "c", job])
        #expect(dispatcher.unfinishedTaskCount == 0)
        #expect(try await dispatcher.value(of: task) == 3)
        try dispatcher.verifyIdle()
    }

    @Test func aJobLeftWhenTheDispatcherGoesAwayIsReported() throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let registry = ManualDispatcherRegistry()
        registry.track {
            let dispatcher = ManualDispatcher()
            // The task never resumes: its job is dropped with the dispatcher, and reported.
            _ = Task(executorPreference: dispatcher.taskExecutor) {}
        }
        let failure = try #require(registry.idleFailures().first)
        #expect(failure.wasReleased)
        #expect(failure.description.contains("\"task executor job\""))
    }
}
