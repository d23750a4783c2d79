import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

/// The async steps and waits: they run what is due at once, suspend until a dispatch wakes them, end with a
/// clear error at their real-time bound, and leave nothing behind when their task is cancelled.
@Suite(.timeLimit(.minutes(1))) struct ManualDispatcherWaitingTests {
    /// The dispatchers' `waitLimit`: generous, since only a failing test ever spends it. The tests of the bound itself
    /// pass their own, shorter one to the call.
    static let bound = Duration.seconds(30)

    @Test func aTaskDispatchedBeforeTheCallRunsWithoutWaiting() async throws {
        let dispatcher = ManualDispatcher(waitLimit: Self.bound)
        let registrations = dispatcher.countingWaiterRegistrations()
        let log = EventLog()
        dispatcher.background(label: "early") { log.record("early") }

        let run = try await dispatcher.runNextBackground()

        #expect(run.task.label == "early")
        #expect(log.events == ["early"])
        #expect(registrations.value == 0)  // nothing to wait for: it never suspended
        #expect(dispatcher.waiterCount == 0)
        try dispatcher.verifyIdle()
    }

    @Test func aSuspendedStepIsWokenByTheDispatchAndRunsTheTask() async throws {
        let dispatcher = ManualDispatcher(waitLimit: Self.bound)
        let registrations = dispatcher.countingWaiterRegistrations()
        let log = EventLog()
        let step = Task { try await dispatcher.runNextBackground() }
        await registrations.reach(1)
        #expect(dispatcher.waiterCount == 1)

        dispatcher.background(label: "late") { log.record("late") }
        let run = try await step.value

        #expect(run.task.label == "late")
        #expect(run.task.context == .background)
        #expect(log.events == ["late"])
        #expect(dispatcher.waiterCount == 0)
        #expect(dispatcher.history.map(\.task.label) == ["late"])
        try dispatcher.verifyIdle()
    }

    @Test func aDispatchToTheOtherContextDoesNotWakeTheStep() async throws {
        let dispatcher = ManualDispatcher(waitLimit: Self.bound)
        let registrations = dispatcher.countingWaiterRegistrations()
        let step = Task { try await dispatcher.runNextBackground() }
        await registrations.reach(1)

        dispatcher.foreground(label: "deliver") {}
        dispatcher.background(after: .seconds(1), label: "later") {}
        #expect(dispatcher.waiterCount == 1)  // a dispatch checks the waiters before it returns

        dispatcher.background(label: "parse") {}
        let run = try await step.value

        #expect(run.task.label == "parse")
        #expect(dispatcher.pendingTasks.map(\.label) == ["deliver", "later"])
        #expect(registrations.value == 1)
        try await dispatcher.runUntilIdle()
    }

    @Test @MainActor func theForegroundStepRunsTheTaskOnTheMainActor() async throws {
        let dispatcher = ManualDispatcher(waitLimit: Self.bound)
        let registrations = dispatcher.countingWaiterRegistrations()
        let onMainQueue = EventLog()
        let step = Task { try await dispatcher.runNextForeground() }
        await registrations.reach(1)

        dispatcher.foreground(label: "show") { onMainQueue.record("\(MainQueueProbe.isOnMainQueue)") }
        let run = try await step.value

        #expect(run.task.label == "show")
        #expect(onMainQueue.events == ["true"])
    }

    @Test func runNextWaitsForEitherContext() async throws {
        let dispatcher = ManualDispatcher(waitLimit: Self.bound)
        let registrations = dispatcher.countingWaiterRegistrations()
        let step = Task { try await dispatcher.runNext() }
        await registrations.reach(1)

        dispatcher.foreground(label: "first") {}
        let run = try await step.value

        #expect(run.task.label == "first")
        try dispatcher.verifyIdle()
    }

    @Test func twoWaitingStepsTakeOneTaskEach() async throws {
        let dispatcher = ManualDispatcher(waitLimit: Self.bound)
        let registrations = dispatcher.countingWaiterRegistrations()
        let first = Task { try await dispatcher.runNextBackground() }
        let second = Task { try await dispatcher.runNextBackground() }
        await registrations.reach(2)

        dispatcher.background(label: "a") {}
        dispatcher.background(label: "b") {}
        let labels = [try await first.value.task.label, try await second.value.task.label].compactMap { $0 }

        #expect(labels.sorted() == ["a", "b"])
        #expect(dispatcher.waiterCount == 0)
        try dispatcher.verifyIdle()
    }

    @Test func aTaskRunByAWaitingStepThatRunsTheDispatcherIsRejected() async throws {
        let dispatcher = ManualDispatcher()
        let caught = Locked<ManualDispatcherError?>(nil)
        dispatcher.background(label: "nested") {
            do {
                try dispatcher.runNext()
            } catch let error as ManualDispatcherError {
                caught.withLock { $0 = error }
            } catch {}
        }

        try await dispatcher.runNextBackground(waitingUpTo: .seconds(10))

        let error = try #require(caught.withLock { $0 })
        #expect(error.kind == .reentrantRun)
        #expect(
            error.summary
                == "runNext() was called while runNextBackground(waitingUpTo: 10 s) is running tasks (inside task "
                + "#1 background \"nested\" at \(error.recentRuns.last?.task.callSite.description ?? "?"), ran at 0 s). A task "
                + "must not run other tasks: dispatch the work instead, and let the test run it"
        )
    }

    // MARK: - The real-time bound

    @Test func aStepPastItsBoundSaysWhatItAwaitedForHowLongAndWhatIsPending() async throws {
        let dispatcher = ManualDispatcher()
        let line = #line + 1
        dispatcher.foreground(label: "deliver") {}

        let error = try await #require(throws: ManualDispatcherError.self) {
            try await dispatcher.runNextBackground(waitingUpTo: .milliseconds(50))
        }

        #expect(error.kind == .waitTimedOut(after: .milliseconds(50)))
        #expect(
            error.summary
                == "runNextBackground(waitingUpTo: 50 ms) found no background task due within 50 ms of real time "
                + "(the virtual clock stands at 0 s); 1 foreground task is due (\"deliver\" from "
                + "TaskDispatchTestingTests/ManualDispatcherWaitingTests.swift:\(line)): run it with runNextForeground() "
                + "or runNext()"
        )
        #expect(
            error.description.contains(
                "Pending tasks (1):\n  #1 foreground \"deliver\" at TaskDispatchTestingTests/ManualDispatcherWaitingTests.swift:\(line), due 0 s"
            )
        )
        #expect(dispatcher.waiterCount == 0)
        #expect(dispatcher.pendingTaskCount == 1)  // the bound ran nothing and lost nothing
        try await dispatcher.runUntilIdle()
    }

    @Test func aBoundOfZeroChecksOnceAndSaysNothingIsPending() async throws {
        let dispatcher = ManualDispatcher()

        let error = try await #require(throws: ManualDispatcherError.self) {
            try await dispatcher.runNext(waitingUpTo: .zero)
        }

        #expect(error.kind == .waitTimedOut(after: .zero))
        #expect(
            error.summary
                == "runNext(waitingUpTo: 0 s) found no task due within 0 s of real time (the virtual clock stands at "
                + "0 s); nothing else is pending either: check that the code under test was given this dispatcher and "
                + "dispatched its work"
        )
        #expect(dispatcher.waiterCount == 0)
    }

    @Test func aDelayedTaskDoesNotFallDueWhileAStepWaits() async throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background(after: .seconds(5), label: "retry") {}

        let error = try await #require(throws: ManualDispatcherError.self) {
            try await dispatcher.runNextForeground(waitingUpTo: .milliseconds(20))
        }

        #expect(error.kind == .waitTimedOut(after: .milliseconds(20)))
        #expect(error.summary.contains("1 delayed task waits for the clock, the first (\"retry\" from "))
        #expect(
            error.summary.hasSuffix(
                "due at 5 s: move the clock with advance(by:) or advance(to:), or use runUntilIdle()"))
        #expect(dispatcher.now == .zero)
        try await dispatcher.runUntilIdle()
    }

    // MARK: - Waiting for pending tasks

    @Test func waitForPendingTasksReturnsOnceEnoughAreDispatched() async throws {
        let dispatcher = ManualDispatcher(waitLimit: Self.bound)
        let registrations = dispatcher.countingWaiterRegistrations()
        let waiting = Task { try await dispatcher.waitForPendingTasks(2, in: .background) }
        await registrations.reach(1)

        dispatcher.background(label: "one") {}
        dispatcher.foreground(label: "not counted") {}
        #expect(dispatcher.waiterCount == 1)
        dispatcher.background(after: .seconds(1), label: "two") {}  // delayed tasks are pending too
        try await waiting.value

        #expect(dispatcher.waiterCount == 0)
        #expect(dispatcher.pendingTaskCount(in: .background) == 2)
        #expect(dispatcher.history.isEmpty)  // it waits; it runs nothing
        try await dispatcher.runUntilIdle()
    }

    @Test func waitForPendingTasksCountsTasksDispatchedBeforeTheCall() async throws {
        let dispatcher = ManualDispatcher(waitLimit: Self.bound)
        let registrations = dispatcher.countingWaiterRegistrations()
        dispatcher.foreground {}

        try await dispatcher.waitForPendingTasks()
        try await dispatcher.waitForPendingTasks(0, waitingUpTo: .zero)

        #expect(registrations.value == 0)
        try await dispatcher.runUntilIdle()
    }

    @Test func waitForPendingTasksPastItsBoundSaysHowManyArePending() async throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background(label: "one") {}

        let error = try await #require(throws: ManualDispatcherError.self) {
            try await dispatcher.waitForPendingTasks(2, in: .background, waitingUpTo: .milliseconds(30))
        }

        #expect(error.kind == .waitTimedOut(after: .milliseconds(30)))
        #expect(
            error.summary
                == "waitForPendingTasks(2, in: .background, waitingUpTo: 30 ms) waited 30 ms of real time for 2 pending "
                + "background tasks, but 1 is pending; check that the code under test was started (in a Task, before "
                + "this wait), that it was given this dispatcher, and that it dispatches that many tasks"
        )
        #expect(error.pendingTasks.map(\.label) == ["one"])
        try await dispatcher.runUntilIdle()
    }

    @Test func aWaitThatEndedKeepsNothingAliveUntilItsDeadline() async throws {
        weak var released: ManualDispatcher?
        do {
            let dispatcher = ManualDispatcher(waitLimit: .seconds(600))
            released = dispatcher
            // Called once the wait has registered and set its 600 s timer: the dispatch wakes it at once.
            dispatcher.observeWaiterRegistrations { [weak dispatcher] in dispatcher?.background(label: "wake") {} }

            try await dispatcher.runNextBackground()

            #expect(dispatcher.history.map(\.task.label) == ["wake"])
            #expect(dispatcher.waiterCount == 0)
        }
        #expect(released == nil)  // the pending timer holds the dispatcher weakly
    }

    // MARK: - Cancellation

    @Test func cancellingAWaitingStepThrowsCancellationErrorAndLeavesNothingBehind() async throws {
        let dispatcher = ManualDispatcher(waitLimit: Self.bound)
        let registrations = dispatcher.countingWaiterRegistrations()
        let step = Task { try await dispatcher.runNextBackground() }
        await registrations.reach(1)

        step.cancel()
        let result = await step.result

        #expect(throws: CancellationError.self) { try result.get() }
        #expect(dispatcher.waiterCount == 0)
        dispatcher.background(label: "after") {}
        #expect(dispatcher.pendingTasks.map(\.label) == ["after"])  // no stale waiter took it
        try await dispatcher.runUntilIdle()
    }

    @Test func cancellingAWaitForPendingTasksThrowsCancellationError() async throws {
        let dispatcher = ManualDispatcher(waitLimit: Self.bound)
        let registrations = dispatcher.countingWaiterRegistrations()
        let waiting = Task { try await dispatcher.waitForPendingTasks(3) }
        await registrations.reach(1)

        waiting.cancel()

        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(dispatcher.waiterCount == 0)
    }

    @Test func aStepInAnAlreadyCancelledTaskThrowsWithoutWaiting() async throws {
        let dispatcher = ManualDispatcher(waitLimit: Self.bound)
        let registrations = dispatcher.countingWaiterRegistrations()
        let step = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await dispatcher.runNextBackground()
        }

        await #expect(throws: CancellationError.self) { try await step.value }
        #expect(registrations.value == 0)
        #expect(dispatcher.waiterCount == 0)
    }

    @Test func aDueTaskRunsEvenInACancelledTask() async throws {
        // Like the synchronous step, a due task runs: cancellation only ends a wait.
        let dispatcher = ManualDispatcher(waitLimit: Self.bound)
        dispatcher.background(label: "due") {}
        let step = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await dispatcher.runNextBackground()
        }

        #expect(try await step.value.task.label == "due")
    }
}
