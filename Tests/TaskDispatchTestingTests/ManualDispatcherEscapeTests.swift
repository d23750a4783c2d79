import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

/// The dispatchers' `waitLimit`, the real-time bound on the waiting steps: generous, since only a failing test
/// spends it.
private let waitLimit = Duration.seconds(60)

/// An actor without a custom executor.
private actor Store {
    private var value = 0
    func increment() -> Int {
        self.value += 1
        return self.value
    }
}

/// What the dispatcher can and cannot drive: each test shows one documented escape.
@Suite struct ManualDispatcherEscapeTests {
    @Test func aTaskNotStartedThroughTheDispatcherIsInvisibleToIt() async throws {
        let dispatcher = ManualDispatcher()
        let plain = Task { 1 }
        #expect(dispatcher.pendingTaskCount == 0)
        #expect(dispatcher.unfinishedTaskCount == 0)
        #expect(await plain.value == 1)
    }

    @Test @MainActor func aMainActorOperationRunsOnlyWhenTheTestLetsTheMainActorGo() async throws {
        let dispatcher = ManualDispatcher()
        let ran = MainActorFlag()
        let task = dispatcher.startTask(label: "show") { ran.isSet = true }
        try await dispatcher.runNextForeground()  // the start: the operation is now queued on the real main actor
        #expect(!ran.isSet)  // this test holds the main actor
        try await dispatcher.value(of: task)  // awaiting lets it run
        #expect(ran.isSet)
    }

    @Test func aTrackedTaskAwaitingAnotherTrackedTaskIsDrivenByOneDrain() async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let dispatcher = ManualDispatcher()
        let inner = dispatcher.startTask(label: "inner") { 41 }
        let outer = dispatcher.startTask(label: "outer") { try await inner.value + 1 }
        try await dispatcher.runUntilIdle()
        // The inner task's end resumes the outer one on the task executor, inside the same drain.
        #expect(dispatcher.unfinishedTaskCount == 0)
        #expect(try await dispatcher.value(of: outer) == 42)
        #expect(try await dispatcher.value(of: inner) == 41)
    }

    @Test func aDefaultActorRunsOnTheTaskExecutorInsideTheDrain() async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let dispatcher = ManualDispatcher()
        let store = Store()
        let task = dispatcher.startTask(label: "count") { await store.increment() }
        // SE-0417: an actor without a custom executor runs on the calling task's preferred executor, so the
        // hop to the actor and back happens inside this drain. Only actors with their own executor (the main
        // actor, or a custom SerialExecutor) leave the dispatcher.
        try await dispatcher.runUntilIdle()
        #expect(dispatcher.unfinishedTaskCount == 0)
        #expect(try await dispatcher.value(of: task) == 1)
    }
}

extension ManualDispatcherEscapeTests {
    @Test func taskYieldLeavesTheDispatcherForAMomentAndTheAsyncDrainWaitsForIt() async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let task = dispatcher.startTask(label: "polite") { () async throws -> Int in
            await Task.yield()  // may resume on the global executor (swiftlang/swift#74395), not as a job here
            return try await dispatcher.runInBackground(label: "after yield") { 1 }
        }
        // The async drain does not count yields: the task is unsettled until it awaits "after yield", and that
        // await, reported to the dispatcher, wakes the drain.
        try await dispatcher.runUntilIdle()
        #expect(dispatcher.history.map(\.task.label).contains("after yield"))
        #expect(try await dispatcher.value(of: task) == 1)
    }

    @Test func anActorWithItsOwnExecutorIsAHopTheAsyncDrainWaitsFor() async throws {
        // A custom executor takes an `ExecutorJob`, which macOS 14 / iOS 17 introduced.
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) else { return }
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let remote = QueueBoundCounter()
        let task = dispatcher.startTask(label: "remote") { () async throws -> Int in
            let counted = await remote.increment()  // runs on the actor's own queue, outside the dispatcher
            return try await dispatcher.runInBackground(label: "store") { counted * 10 }
        }
        try await dispatcher.runUntilIdle()
        #expect(dispatcher.history.map(\.task.label).contains("store"))
        #expect(try await dispatcher.value(of: task) == 10)
        try dispatcher.verifyIdle()
    }

    /// macOS 13-14 and iOS 16-17 have no task executor: a nonisolated tracked task runs on the global executor
    /// after its start. The synchronous drain cannot drive it there; the async drain can, because it knows from
    /// its records when the task waits on the dispatcher, wherever the task's code runs.
    @Test func withoutTheTaskExecutorTheAsyncDrainStillDrivesAChainInOrder() async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let task = dispatcher.startTask(label: "chain") { () async throws -> Int in
            let a = try await dispatcher.runInBackground(label: "a") { 1 }
            let b = try await dispatcher.runInBackground(label: "b") { a + 1 }
            return try await dispatcher.runInBackground(label: "c") { b + 1 }
        }
        #expect(dispatcher.pendingTasks.map(\.label) == ["chain"])  // no first job on an executor of ours
        try await dispatcher.runUntilIdle()
        #expect(dispatcher.history.map(\.task.label) == ["chain", "a", "b", "c"])
        #expect(try await dispatcher.value(of: task) == 3)
    }
}

/// A counter isolated to an actor whose executor is a serial dispatch queue of its own.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
private actor QueueBoundCounter {
    private let executor = QueueExecutor()
    private var count = 0

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        self.executor.asUnownedSerialExecutor()
    }

    func increment() -> Int {
        self.count += 1
        return self.count
    }
}

/// A serial executor that runs each job on a serial dispatch queue. `ExecutorJob` and `UnownedJob(_:)` need
/// macOS 14 / iOS 17.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
private final class QueueExecutor: SerialExecutor {
    private let queue = DispatchQueue(label: "QueueExecutor")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}

/// A flag on the main actor.
@MainActor private final class MainActorFlag {
    var isSet = false
}
