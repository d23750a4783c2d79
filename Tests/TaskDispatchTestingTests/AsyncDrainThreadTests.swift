import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

/// An async drain called off the main actor runs each foreground task as a block on the main queue, as a synchronous
/// drain does, but suspended meanwhile: the thread it was on (the cooperative pool's, or a task executor's) is free
/// for other work until the task has run.
@Suite(.timeLimit(.minutes(1))) struct AsyncDrainThreadTests {
    /// The drain runs on a task executor that runs its jobs on one serial queue. A block the foreground task
    /// enqueues there, and waits for, runs while the foreground task runs: the drain gave the queue up. A drain that
    /// blocked the queue until the foreground task ended would leave the block waiting until after the background
    /// task.
    @Test func theDrainsThreadIsFreeWhileAForegroundTaskRuns() async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let dispatcher = ManualDispatcher()
        let executor = SerialQueueTaskExecutor()
        let log = EventLog()
        dispatcher.foreground {
            log.record("foreground")
            let ran = DispatchSemaphore(value: 0)
            executor.enqueueBlock {
                log.record("block on the drain's queue")
                ran.signal()
            }
            // The block can run only once the drain has given its queue up; a drain blocked until this task ends
            // holds it for the whole bound.
            if ran.wait(timeout: .now() + 30) == .timedOut { log.record("the block did not run within 30 s") }
        }
        dispatcher.background { log.record("background") }
        let ran = try await Task(executorPreference: executor) { try await dispatcher.runUntilIdle() }.value
        #expect(ran == 2)
        #expect(log.events == ["foreground", "block on the drain's queue", "background"])
        try dispatcher.verifyIdle()
    }

    /// The foreground task runs on the main queue outside any Swift task, as in production, not inside the test's
    /// task: it does not see the test's cancellation.
    @Test(arguments: [false, true]) func aForegroundTaskRunsOnTheMainQueueOutsideTheDrainsTask(stepping: Bool)
        async throws
    {
        let dispatcher = ManualDispatcher()
        let seen = EventLog()
        dispatcher.foreground {
            let inATask = withUnsafeCurrentTask { $0 != nil }
            seen.record("main queue: \(MainQueueProbe.isOnMainQueue), in a task: \(inATask)")
        }
        let drain = Task.detached {
            withUnsafeCurrentTask { $0?.cancel() }
            if stepping { try await dispatcher.runNext() } else { _ = try await dispatcher.runUntilIdle() }
        }
        try await drain.value
        #expect(seen.events == ["main queue: true, in a task: false"])
        try dispatcher.verifyIdle()
    }

    /// A run method called from the foreground task is refused as re-entrant, though the suspended drain's claim
    /// names no thread while the task runs.
    @Test func aRunMethodInsideTheForegroundTaskIsStillRefused() async throws {
        let dispatcher = ManualDispatcher()
        let refusal = EventLog()
        dispatcher.foreground {
            do {
                try dispatcher.runNextBackground()
                refusal.record("ran")
            } catch {
                refusal.record((error as? ManualDispatcherError).map { "\($0.kind)" } ?? "\(error)")
            }
        }
        dispatcher.background {}
        let ran = try await Task.detached { try await dispatcher.runUntilIdle() }.value
        #expect(refusal.events == ["reentrantRun"])
        #expect(ran == 2)
        try dispatcher.verifyIdle()
    }
}
