import TaskDispatch
import TaskDispatchTesting
import Testing

// An await on a ManualDispatcher's work from code that no startTask started, often the test itself: no drain waits for
// such code, and a test that awaits the work cannot also run it. 1.0 bounds the await by the dispatcher's waitLimit:
// the awaited task is cancelled and the await throws, naming the work and its line, instead of hanging with no
// message. The clock sleeps below are on the dispatcher's virtual clock.

@Suite(.timeLimit(.minutes(1))) struct UntrackedAwaitTests {
    @Test func aTestThatAwaitsRunInBackgroundInManualModeFailsWithinTheWaitLimit() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(100))
        let log = EventLog()
        let line = #line + 1
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runInBackground(label: "parse") { log.record("parsed") }
        }
        #expect(error?.kind == .waitTimedOut(after: .milliseconds(100)))
        #expect(
            error?.summary
                == "runInBackground \"parse\" (TaskDispatchTestingTests/UntrackedAwaitTests.swift:\(line)), awaited from code that no startTask started, did not run within 100 ms of real time, so the dispatcher cancelled it and ended the await with this error. In manual mode only the test runs tasks, and a test that awaits this work itself cannot also run it: start the awaiting code with dispatcher.startTask and drive it with try await dispatcher.runUntilIdle(), or use mode .autoDrain"
        )
        // Cancelled, not lost: nothing is pending, and the closure never runs.
        #expect(dispatcher.pendingTaskCount == 0)
        try await dispatcher.runUntilIdle()
        #expect(log.events.isEmpty)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func aTestThatAwaitsRunOnMainActorInManualModeFailsWithinTheWaitLimit() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(100))
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runOnMainActor(label: "show") { 1 }
        }
        #expect(error?.kind == .waitTimedOut(after: .milliseconds(100)))
        #expect(
            error?.summary.hasPrefix("runOnMainActor \"show\" (TaskDispatchTestingTests/UntrackedAwaitTests.swift:")
                == true)
        #expect(dispatcher.pendingTaskCount == 0)
        try dispatcher.verifyIdle()
    }

    @Test func aTestThatSleepsOnTheClockFailsWithinTheWaitLimit() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(100))
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.clock.sleep(for: .seconds(5))
        }
        #expect(error?.kind == .waitTimedOut(after: .milliseconds(100)))
        #expect(
            error?.summary.hasPrefix(
                "a sleep on the dispatcher's clock (\"clock sleep until 5 s\"), awaited from code that no startTask started, did not run within 100 ms of real time"
            ) == true
        )
        #expect(dispatcher.pendingTaskCount == 0)
        #expect(dispatcher.now == .zero)
        try dispatcher.verifyIdle()
    }

    @Test func aDelayedAwaitInAutoDrainSaysTheClockMustMove() async throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain, waitLimit: .milliseconds(100))
        #expect(try await dispatcher.runInBackground { 1 } == 1)  // due: runs at once
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runInBackground(after: .seconds(1), label: "later") { 2 }
        }
        #expect(error?.kind == .waitTimedOut(after: .milliseconds(100)))
        #expect(error?.summary.contains("In auto-drain, a delayed task or a sleep still waits for the clock") == true)
        try await dispatcher.advance(by: .seconds(1))  // the cancelled task does not run
        #expect(dispatcher.history.map(\.task.label) == [nil])
        try dispatcher.verifyIdle()
    }

    @Test func anAwaitTheTestRunsInTimeReturnsItsValue() async throws {
        let dispatcher = ManualDispatcher()
        async let value = dispatcher.runInBackground(label: "parse") { 42 }
        try await dispatcher.runNextBackground()  // waits for the dispatch, then runs it
        #expect(try await value == 42)
        try dispatcher.verifyIdle()
    }

    @Test func aDecoratorThatCopiesTheTaskKeepsTheBound() async throws {
        let manual = ManualDispatcher(waitLimit: .milliseconds(100))
        let dispatcher = ForwardingDispatcher(base: manual, rewrite: .copy)
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runInBackground(label: "parse") { 1 }
        }
        #expect(error?.summary.hasPrefix("runInBackground \"relabeled parse\"") == true)
        #expect(manual.pendingTaskCount == 0)
    }

    /// A tracked task's await is the drains' business: the bound leaves it alone, however long the test takes to
    /// drive it, and the async drain's own limit applies.
    @Test func aTrackedTasksAwaitIsNotCancelledByTheBound() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(50))
        let task = dispatcher.startTask(label: "load") { () async throws -> Int in
            try await dispatcher.runInBackground(label: "parse") { 42 }
        }
        // The test's own waits get a generous limit: only the untracked sleep below is bounded by 50 ms.
        try await dispatcher.runNext(waitingUpTo: .seconds(10))  // the start
        try await dispatcher.waitForPendingTasks(1, waitingUpTo: .seconds(10))  // the task now awaits "parse"
        // Past the bound's deadline, woken by an event: a second, untracked await bounded by the same limit.
        await #expect(throws: ManualDispatcherError.self) { try await dispatcher.clock.sleep(for: .seconds(1)) }
        #expect(dispatcher.pendingTasks.map(\.label) == ["parse"])
        try await dispatcher.runUntilIdle(waitingUpTo: .seconds(10))
        #expect(try await task.value == 42)
        try dispatcher.verifyIdle()
    }
}
