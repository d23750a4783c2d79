import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

@Suite struct ManualDispatcherErrorTests {
    /// A summary names at most 20 tracked tasks and counts the rest, as the description lists at most 20 pending
    /// tasks: with thousands of tracked tasks the message stayed one line per task.
    @Test func aSummaryNamesAtMostTwentyTrackedTasks() async throws {
        let dispatcher = ManualDispatcher()
        let tasks = (0..<25).map { index in
            dispatcher.startTask(label: "sleeper \(index)") { try await dispatcher.clock.sleep(for: .seconds(1)) }
        }
        try await dispatcher.advance(by: .zero)  // each reaches its sleep
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        let summary = error?.summary ?? ""
        #expect(summary.contains("\"sleeper 19\" started at"), "\(summary)")
        #expect(!summary.contains("\"sleeper 20\""), "\(summary)")
        #expect(summary.contains("; … and 5 more."), "\(summary)")
        for task in tasks { task.cancel() }
        try await dispatcher.runUntilIdle()
        try dispatcher.verifyIdle()
    }

    @Test func steppingAnEmptyBackgroundNamesTheWaitingForegroundTask() throws {
        let dispatcher = ManualDispatcher()
        let line = #line + 1
        dispatcher.foreground(label: "deliver") {}
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.runNextBackground() }
        #expect(error.kind == .noTaskToRun(.background))
        #expect(
            error.summary
                == "runNextBackground() found no background task due at 0 s; 1 foreground task is due (\"deliver\" "
                + "from TaskDispatchTestingTests/ManualDispatcherErrorTests.swift:\(line)): run it with "
                + "runNextForeground() or runNext()"
        )
        #expect(error.pendingTasks.map(\.label) == ["deliver"])
        #expect(error.description.hasPrefix("ManualDispatcher: runNextBackground() found no background task"))
        #expect(error.description.contains("Pending tasks (1):\n  #1 foreground \"deliver\""))
    }

    @Test func steppingAnEmptyForegroundNamesTheWaitingBackgroundAndDelayedTasks() throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background(label: "parse") {}
        dispatcher.foreground(after: .milliseconds(300), label: "timeout") {}
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.runNextForeground() }
        #expect(error.kind == .noTaskToRun(.foreground))
        #expect(
            error.summary.hasPrefix(
                "runNextForeground() found no foreground task due at 0 s; 1 background task is due (\"parse\" from "))
        #expect(error.summary.contains("run it with runNextBackground() or runNext()"))
        #expect(
            error.summary.contains(
                "1 delayed task waits for the clock, the first (\"timeout\" from TaskDispatchTestingTests/"
            )
        )
        #expect(
            error.summary.hasSuffix(
                "due at 300 ms: move the clock with advance(by:) or advance(to:), or use runUntilIdle()"))
    }

    @Test func steppingWhenNothingIsPendingSaysSo() throws {
        let dispatcher = ManualDispatcher()
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.runNext() }
        #expect(error.kind == .noTaskToRun(nil))
        #expect(
            error.summary
                == "runNext() found no task due at 0 s; nothing else is pending either: check that the code under "
                + "test was given this dispatcher and dispatched its work"
        )
        #expect(error.seed == nil)
    }

    /// After runs, the work the test looks for may have run already (inside `advance(by:)`, say): the hint says so.
    @Test func steppingWhenNothingIsPendingAfterRunsPointsAtTheLastRuns() throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background(after: .seconds(1), label: "retry") {
            dispatcher.foreground(label: "deliver") {}
        }
        try dispatcher.advance(by: .seconds(1))  // runs "deliver" too, dispatched for the same instant
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.runNextForeground() }
        #expect(
            error.summary.hasSuffix(
                "nothing else is pending either: it may have run already (the last runs are below); if not, check "
                    + "that the code under test was given this dispatcher and dispatched its work"), "\(error)")
        #expect(error.description.contains("foreground \"deliver\""), "\(error)")
    }

    @Test func anEmptyStepLeavesTheDispatcherUsable() throws {
        let dispatcher = ManualDispatcher()
        #expect(throws: ManualDispatcherError.self) { try dispatcher.runNextBackground() }
        let log = EventLog()
        dispatcher.background { log.record("ran") }
        try dispatcher.runNextBackground()
        #expect(log.events == ["ran"])
    }

    @Test func verifyIdleListsEveryPendingTaskWithItsCallSite() throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.verifyIdle()
        let line = #line + 1
        dispatcher.background(label: "upload") {}
        dispatcher.foreground(after: .seconds(1), label: "refresh") {}
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error.kind == .pendingTasks)
        #expect(
            error.summary
                == "expected no pending tasks, but 2 tasks never ran. Run them (runUntilIdle()), cancel them, or fix "
                + "the code that dispatched them"
        )
        #expect(
            error.description.contains(
                "#1 background \"upload\" at TaskDispatchTestingTests/ManualDispatcherErrorTests.swift:\(line), due 0 s"
            )
        )
        #expect(error.description.contains("#2 foreground \"refresh\" at TaskDispatchTestingTests/"))
        try dispatcher.runUntilIdle()
        try dispatcher.verifyIdle()
    }

    @Test func runUntilIdleStopsARunawayTaskAndNamesIt() throws {
        let dispatcher = ManualDispatcher(runawayLimit: 49)  // one pending at the start, plus 49
        let line = #line + 3
        @Sendable func poll() {
            // Reschedules itself forever.
            dispatcher.background(label: "poll") { poll() }
        }
        poll()
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.runUntilIdle() }
        #expect(error.kind == .runawayTasks(limit: 49))
        #expect(
            error.summary
                == "runUntilIdle() ran 50 tasks and tasks keep falling due; the tasks that keep coming "
                + "back are \"poll\" from TaskDispatchTestingTests/ManualDispatcherErrorTests.swift:\(line) (50 of "
                + "the last 50 runs). Stop the task that reschedules itself, or raise the dispatcher's runawayLimit if that many tasks "
                + "are expected"
        )
        #expect(dispatcher.pendingTaskCount == 1)  // the next poll is still there, not lost
        dispatcher.cancelAllPendingTasks()
    }

    /// Without a history the runs cannot be named: the message says why, instead of naming nothing (a probe).
    @Test func aRunawayWithoutAHistorySaysWhyItNamesNoTask() throws {
        let dispatcher = ManualDispatcher(runawayLimit: 9, historyLimit: 0)
        @Sendable func poll() {
            dispatcher.background(label: "poll") { poll() }
        }
        poll()
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.runUntilIdle() }
        #expect(error.kind == .runawayTasks(limit: 9))
        #expect(
            error.summary
                == "runUntilIdle() ran 10 tasks and tasks keep falling due; this dispatcher keeps no history "
                + "(historyLimit: 0), so the tasks that ran cannot be named here (the pending ones are listed below). "
                + "Raise the dispatcher's runawayLimit if that many tasks are expected, or stop the task that "
                + "reschedules itself")
        #expect(error.pendingTasks.map(\.label) == ["poll"])
        dispatcher.cancelAllPendingTasks()
    }

    @Test func advanceStopsARunawayTimerAndNamesIt() throws {
        let dispatcher = ManualDispatcher(runawayLimit: 19)  // one pending at the start, plus 19
        @Sendable func tick() {
            dispatcher.background(after: .milliseconds(10), label: "tick") { tick() }
        }
        tick()
        // 1 s of 10 ms ticks is 100 tasks: within the window, but past the bound of 20.
        let error = try #require(throws: ManualDispatcherError.self) {
            try dispatcher.advance(by: .seconds(1))
        }
        #expect(error.kind == .runawayTasks(limit: 19))
        #expect(error.summary.hasPrefix("advance(by: 1 s) ran 20 tasks and tasks keep falling due;"))
        #expect(error.summary.contains("\"tick\" from TaskDispatchTestingTests/ManualDispatcherErrorTests.swift:"))
        #expect(dispatcher.now == .milliseconds(200))
        dispatcher.cancelAllPendingTasks()
    }

    @Test func aBoundThatIsExactlyEnoughIsNotAnError() throws {
        let dispatcher = ManualDispatcher(runawayLimit: 5)
        dispatcher.background { for _ in 0..<5 { dispatcher.background {} } }  // 1 pending, then 5 more
        #expect(try dispatcher.runUntilIdle() == 6)
    }

    @Test func aRunawayLimitBelowOneCountsAsOne() throws {
        let dispatcher = ManualDispatcher(runawayLimit: 0)
        #expect(dispatcher.runawayLimit == 1)
        let log = EventLog()
        #expect(try dispatcher.runUntilIdle() == 0)  // nothing due: fine
        dispatcher.background(label: "work") {
            log.record("work")
            dispatcher.background(label: "more") { dispatcher.background(label: "and more") {} }
        }
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.runUntilIdle() }
        #expect(error.kind == .runawayTasks(limit: 1))
        #expect(log.events == ["work"])
        #expect(dispatcher.pendingTaskCount == 1)
        dispatcher.cancelAllPendingTasks()
    }

    @Test func movingTheClockBackwardsIsRejectedWithBothTimes() throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.advance(to: .seconds(2))
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.advance(to: .seconds(1)) }
        #expect(error.kind == .clockMovedBackwards(from: .seconds(2), to: .seconds(1)))
        #expect(
            error.summary
                == "advance(to: 1 s) would move the clock backwards, from 2 s to 1 s; virtual time only "
                + "moves forward. Pass a later time, or a positive duration"
        )
        let negative = try #require(throws: ManualDispatcherError.self) {
            try dispatcher.advance(by: .milliseconds(-500))
        }
        #expect(negative.kind == .clockMovedBackwards(from: .seconds(2), to: .milliseconds(1_500)))
        #expect(negative.summary.contains("from 2 s to 1.5 s"))
        #expect(dispatcher.now == .seconds(2))
    }

    @Test func aTaskThatRunsTheDispatcherIsRejected() throws {
        let dispatcher = ManualDispatcher()
        let captured = ErrorBox()
        let line = #line + 1
        dispatcher.background(label: "greedy") {
            captured.store { try dispatcher.runNextBackground() }
        }
        dispatcher.background(label: "victim") {}
        try dispatcher.runNextBackground()
        let error = try #require(captured.error)
        #expect(error.kind == .reentrantRun)
        #expect(
            error.summary
                == "runNextBackground() was called while runNextBackground() is running tasks (inside task #1 "
                + "background \"greedy\" at TaskDispatchTestingTests/ManualDispatcherErrorTests.swift:\(line), ran "
                + "at 0 s). A task must not run other tasks: dispatch the work instead, and let the test run it"
        )
        // Nothing was corrupted: the other task is still pending and runs normally.
        #expect(dispatcher.pendingTasks.map(\.label) == ["victim"])
        try dispatcher.runUntilIdle()
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func aForegroundTaskThatRunsTheDispatcherIsRejected() throws {
        let dispatcher = ManualDispatcher()
        let captured = ErrorBox()
        dispatcher.foreground(label: "greedy") {
            captured.store { try dispatcher.runUntilIdle() }
        }
        try dispatcher.runUntilIdle()
        #expect(captured.error?.kind == .reentrantRun)
    }

    @Test func aForegroundTaskHoppedToTheMainQueueThatRunsTheDispatcherIsRejected() throws {
        // The test is not on the main actor: the foreground task runs through DispatchQueue.main.sync, on
        // another thread than the run method's; the call is still recognized as re-entrant, not a deadlock.
        let dispatcher = ManualDispatcher()
        let captured = ErrorBox()
        dispatcher.foreground(label: "greedy") {
            captured.store { try dispatcher.runNext() }
        }
        dispatcher.background(label: "other") {}
        try dispatcher.runNextForeground()
        #expect(captured.error?.kind == .reentrantRun)
        #expect(dispatcher.pendingTaskCount == 1)
    }
}

/// Captures the error a closure throws. `@unchecked Sendable`: `storedError` is only touched under `lock`.
final class ErrorBox: @unchecked Sendable {
    private let lock = NSLockBox()
    private var storedError: ManualDispatcherError?

    func store(_ body: () throws -> Void) {
        do {
            try body()
        } catch {
            self.lock.withLock { self.storedError = error as? ManualDispatcherError }
        }
    }

    var error: ManualDispatcherError? {
        self.lock.withLock { self.storedError }
    }
}

/// Runs `body` on a thread of its own (never on the cooperative pool or a Dispatch worker, which these tests
/// block) and lets the test wait for its result with a bound.
final class BackgroundCall<Value: Sendable>: @unchecked Sendable {
    // `storedResult` is written once before `done` is signalled and read only after waiting on it.
    private var storedResult: Result<Value, any Error>?
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () throws -> Value) {
        onOwnThread {
            self.storedResult = Result { try body() }
            self.done.signal()
        }
    }

    func value() throws -> Value? {
        guard self.done.wait(timeout: .now() + 60) == .success else { return nil }
        return try self.storedResult?.get()
    }
}

@Suite struct ManualDispatcherConcurrentRunTests {
    @Test func aRunFromAnotherThreadWaitsForTheRunInProgress() throws {
        let dispatcher = ManualDispatcher()
        let gate = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        let log = EventLog()
        dispatcher.background(label: "slow") {
            entered.signal()
            _ = gate.wait(timeout: .now() + 60)
            log.record("slow")
        }
        dispatcher.background(label: "next") { log.record("next") }
        let first = BackgroundCall { try dispatcher.runNextBackground().task.label }
        #expect(entered.wait(timeout: .now() + 60) == .success)
        let second = BackgroundCall { try dispatcher.runNextBackground().task.label }
        gate.signal()
        #expect(try first.value() == "slow")
        #expect(try second.value() == "next")
        #expect(log.events == ["slow", "next"])
    }

    @Test func aRunOnTheMainActorDuringAnotherThreadsRunThrowsInsteadOfDeadlocking() async throws {
        let dispatcher = ManualDispatcher()
        let gate = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        dispatcher.background(label: "slow") {
            entered.signal()
            _ = gate.wait(timeout: .now() + 60)
        }
        dispatcher.foreground(label: "ui") {}
        let drain = BackgroundCall { try dispatcher.runUntilIdle() }
        #expect(entered.wait(timeout: .now() + 60) == .success)
        let error = await MainActor.run { () -> ManualDispatcherError? in
            do {
                try dispatcher.runNextForeground()
                return nil
            } catch {
                return error as? ManualDispatcherError
            }
        }
        gate.signal()
        #expect(try drain.value() == 2)
        let thrown = try #require(error)
        #expect(thrown.kind == .concurrentRun)
        #expect(
            thrown.summary.hasPrefix(
                "runNextForeground() was called on the main actor while another thread is running tasks with "
                    + "runUntilIdle() (executing task #1 background \"slow\" at "
                    + "TaskDispatchTestingTests/ManualDispatcherErrorTests.swift:329, ran at 0 s); waiting would deadlock"
            )
        )
    }
}
