import TaskDispatch
import TaskDispatchTesting
import Testing

/// An async drain that waits for its tracked tasks lets a tracked task on the main actor run the due work the drain
/// would wake up to run, inside the dispatch the task awaits: the await returns without suspending, and neither the
/// drain nor the task makes an extra trip through the main actor. These tests check that what runs, in which order,
/// what the runaway bound counts and what a reentrant call sees are the drain's.
@MainActor struct WaitingDrainTests {
    @Test func aMainActorTasksAwaitedWorkRunsInsideItsDispatchWhileTheDrainWaits() async throws {
        let dispatcher = ManualDispatcher()
        var value = 0
        dispatcher.startTask(label: "load") {
            let first = try await dispatcher.runInBackground(label: "fetch") { 1 }
            let second = try await dispatcher.runInBackground(label: "decode") { first + 1 }
            try await dispatcher.runOnMainActor(label: "deliver") { value = second }
        }

        let ran = try await dispatcher.runUntilIdle()

        #expect(value == 2)
        #expect(ran == 4)  // the start, and the three the task ran for the drain, which count as the drain's
        #expect(dispatcher.tasksRunForWaitingDrains == 3)
        #expect(dispatcher.history.map(\.task.label) == ["load", "fetch", "decode", "deliver"])
        try dispatcher.verifyIdle()
    }

    @Test func theWorkRunForAWaitingDrainFollowsItsOrder() async throws {
        let dispatcher = ManualDispatcher(order: .priority)
        dispatcher.startTask(label: "load") {
            dispatcher.background(priority: .background, label: "low") {}
            dispatcher.background(priority: .userInteractive, label: "high") {}
            try await dispatcher.runInBackground(priority: .utility, label: "awaited") {}
        }

        try await dispatcher.runUntilIdle()

        #expect(dispatcher.history.map(\.task.label) == ["load", "high", "awaited", "low"])
        #expect(dispatcher.tasksRunForWaitingDrains == 3)
        try dispatcher.verifyIdle()
    }

    @Test func aTaskThatAwaitsWithoutEndStopsAtTheDrainsRunawayLimit() async throws {
        let dispatcher = ManualDispatcher(runawayLimit: 20)
        let task = dispatcher.startTask(label: "spin") {
            while true { _ = try await dispatcher.runInBackground(label: "again") { 1 } }
        }

        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.runUntilIdle() }

        #expect(error?.kind == .runawayTasks(limit: 20))
        #expect(dispatcher.tasksRunForWaitingDrains == 20)  // then the drain resumed, counted them, and stopped
        task.cancel()  // it awaits the 21st, still pending
        #expect(await task.result.isFailure)
        try dispatcher.verifyIdle()
    }

    @Test func aSynchronousDrainInsideWorkRunForAWaitingDrainIsRefusedAsReentrant() async throws {
        let dispatcher = ManualDispatcher()
        var refusal: ManualDispatcherError?
        dispatcher.startTask(label: "load") {
            do {
                _ = try await dispatcher.runInBackground(label: "nested") { try dispatcher.runUntilIdle() }
            } catch let error as ManualDispatcherError {
                refusal = error
            }
        }

        try await dispatcher.runUntilIdle()

        #expect(dispatcher.tasksRunForWaitingDrains == 1)
        #expect(refusal?.kind == .reentrantRun)
        #expect(refusal?.description.contains("runUntilIdle()") == true, "\(String(describing: refusal))")
        try dispatcher.verifyIdle()
    }

    @Test func aNonisolatedTasksAwaitsWakeTheDrainInstead() async throws {
        let dispatcher = ManualDispatcher()
        let task = Self.startNonisolated(on: dispatcher)

        try await dispatcher.runUntilIdle()

        #expect(try await dispatcher.value(of: task) == 1)
        #expect(dispatcher.tasksRunForWaitingDrains == 0)
        try dispatcher.verifyIdle()
    }

    /// A drain off the main actor would run the background work on its own executor: nothing runs for it.
    @Test nonisolated func aDrainOffTheMainActorIsWokenInstead() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "load") { @MainActor () async throws -> Bool in
            try await dispatcher.runInBackground(label: "fetch") { MainActorExecution.isOnMainActor }
        }

        try await dispatcher.runUntilIdle()

        #expect(try await dispatcher.value(of: task) == false)  // run by the drain, on its executor
        #expect(dispatcher.tasksRunForWaitingDrains == 0)
        try dispatcher.verifyIdle()
    }

    /// Started from a nonisolated function, so the operation is nonisolated and runs on the global executor.
    private nonisolated static func startNonisolated(on dispatcher: ManualDispatcher) -> Task<Int, any Error> {
        dispatcher.startTask(label: "load") { try await dispatcher.runInBackground(label: "fetch") { 1 } }
    }
}

extension Result {
    fileprivate var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}
