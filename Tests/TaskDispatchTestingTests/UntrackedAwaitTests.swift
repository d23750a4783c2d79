import TaskDispatch
import TaskDispatchTesting
import Testing

// An await on a ManualDispatcher's work from code this dispatcher does not track, often the test itself: no drain waits for
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
                == "runInBackground \"parse\" (TaskDispatchTestingTests/UntrackedAwaitTests.swift:\(line)), awaited from code this dispatcher does not track, did not run within 100 ms of real time, so the dispatcher cancelled it and ended the await with this error. In manual mode only the test runs tasks, and a test that awaits the work itself cannot also run it: start the awaiting code with dispatcher.startTask and drive it with try await dispatcher.runUntilIdle(), run the work before the limit, or use mode .autoDrain"
        )
        // Cancelled, not lost: nothing is pending, the closure never runs, and verifyIdle() reports it once more.
        #expect(dispatcher.pendingTaskCount == 0)
        try await dispatcher.runUntilIdle()
        #expect(log.events.isEmpty)
        let reported = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(reported?.kind == .waitTimedOut(after: .milliseconds(100)))
        #expect(
            reported?.summary
                == "verifyIdle() found 1 await from code this dispatcher does not track that did not run within 100 ms of real time, which the dispatcher cancelled: runInBackground \"parse\" (TaskDispatchTestingTests/UntrackedAwaitTests.swift:\(line)). The awaiting code got a waitTimedOut error; unless it passed the error on, the work it awaited was never done. Start such code with dispatcher.startTask and drive it with try await dispatcher.runUntilIdle(), or run the work before the limit"
        )
        try dispatcher.verifyIdle()  // reported once
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
        #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
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
                "a sleep on the dispatcher's clock (\"clock sleep until 5 s\"), awaited from code this dispatcher does not track, did not run within 100 ms of real time"
            ) == true
        )
        #expect(error?.summary.contains("It was still waiting for the clock") == true)
        #expect(dispatcher.pendingTaskCount == 0)
        #expect(dispatcher.now == .zero)
        #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        try dispatcher.verifyIdle()
    }

    @Test func aDelayedAwaitInAutoDrainSaysTheClockMustMove() async throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain, waitLimit: .milliseconds(100))
        #expect(try await dispatcher.runInBackground { 1 } == 1)  // due: runs at once
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runInBackground(after: .seconds(1), label: "later") { 2 }
        }
        #expect(error?.kind == .waitTimedOut(after: .milliseconds(100)))
        #expect(error?.summary.contains("It was still waiting for the clock") == true)
        #expect(error?.summary.contains("or use mode .autoAdvance") == true)
        try await dispatcher.advance(by: .seconds(1))  // the cancelled task does not run
        #expect(dispatcher.history.map(\.task.label) == [nil])
        #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
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
        // The call as written, not the decorator's name for the task.
        #expect(error?.summary.hasPrefix("runInBackground \"parse\"") == true)
        #expect(manual.pendingTaskCount == 0)
    }

    /// A task that another dispatcher tracks is no business of this dispatcher's drains: its await is bounded too.
    @Test func anAwaitFromATaskAnotherDispatcherTracksIsBounded() async throws {
        let tracking = ManualDispatcher(mode: .autoDrain, waitLimit: .seconds(60))
        let holding = ManualDispatcher(waitLimit: .milliseconds(100))
        let task = tracking.startTask(label: "load") { () async throws -> Int in
            try await holding.runInBackground(label: "parse") { 42 }
        }
        let error = await #expect(throws: ManualDispatcherError.self) { try await tracking.value(of: task) }
        #expect(error?.kind == .waitTimedOut(after: .milliseconds(100)))
        #expect(error?.summary.hasPrefix("runInBackground \"parse\"") == true)
        #expect(holding.pendingTaskCount == 0)
        #expect(throws: ManualDispatcherError.self) { try holding.verifyIdle() }
        try tracking.verifyIdle()
    }

    /// Code in a plain `Task` may swallow the error, as a view model's `catch { state = .idle }` does: the work it
    /// awaited is undone, and the test must not pass its idle check.
    @Test func anAwaitWhoseErrorIsSwallowedIsReportedByVerifyIdle() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(100))
        let line = #line + 2
        let swallowing = Task {
            _ = try? await dispatcher.runInBackground(label: "load") { 1 }
        }
        await swallowing.value  // ends once the limit has cancelled "load"
        #expect(dispatcher.pendingTaskCount == 0)
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(
            error?.summary.contains(
                "which the dispatcher cancelled: runInBackground \"load\" (TaskDispatchTestingTests/UntrackedAwaitTests.swift:\(line))"
            ) == true
        )
    }

    /// The release reports it too, to standard error and to a registry, so the idle trait fails the test.
    @Test func anAwaitCancelledByTheLimitIsReportedWhenTheDispatcherIsReleased() async throws {
        let registry = ManualDispatcherRegistry()
        do {
            let dispatcher: ManualDispatcher = registry.track { ManualDispatcher(waitLimit: .milliseconds(100)) }
            await #expect(throws: ManualDispatcherError.self) {
                try await dispatcher.runInBackground(label: "load") { 1 }
            }
        }
        let failures = registry.idleFailures()
        #expect(failures.count == 1)
        #expect(
            failures.first?.description.contains("which the dispatcher cancelled: runInBackground \"load\"") == true)
    }

    /// A tracked task's await is the drains' business: the bound leaves it alone, however long the test takes to
    /// drive it, and the async drain's own limit applies.
    @Test func aTrackedTasksAwaitIsNotCancelledByTheBound() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(50))
        let task = dispatcher.startTask(label: "load") { () async throws -> Int in
            try await dispatcher.runInBackground(label: "parse") { 42 }
        }
        // The test's own waits get a generous limit: only the untracked sleep below is bounded by 50 ms.
        try await dispatcher.runNext(waitingUpTo: .seconds(60))  // the start
        try await dispatcher.waitForPendingTasks(1, waitingUpTo: .seconds(60))  // the task now awaits "parse"
        // Past the bound's deadline, woken by an event: a second, untracked await bounded by the same limit.
        await #expect(throws: ManualDispatcherError.self) { try await dispatcher.clock.sleep(for: .seconds(1)) }
        #expect(dispatcher.pendingTasks.map(\.label) == ["parse"])
        try await dispatcher.runUntilIdle(waitingUpTo: .seconds(60))
        #expect(try await task.value == 42)
        #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }  // the untracked sleep
        try dispatcher.verifyIdle()
    }
}
