import TaskDispatch
import TaskDispatchTesting
import Testing

/// Each message's advice, followed as written, fixes what the message reports. A tracked task that awaits something
/// the dispatcher does not control (here a stream the test feeds) is what no run of the dispatcher moves on.
@Suite(.timeLimit(.minutes(1))) struct ErrorAdviceTests {
    /// `value(of:)` with nothing pending names the task's own wait, in manual mode and in auto-drain, not a run of the
    /// dispatcher's (which would wait out the limit again); feeding the stream, as the advice says, ends it.
    @Test(arguments: [ManualDispatcher.Mode.manual, .autoDrain])
    func valueOfATaskAwaitingOutsideWorkNamesThatWork(mode: ManualDispatcher.Mode) async throws {
        let dispatcher = ManualDispatcher(mode: mode, waitLimit: .milliseconds(200))
        let (lines, feed) = AsyncStream.makeStream(of: String.self)
        let line = #line + 1
        let listener = dispatcher.startTask(label: "listener") { @concurrent in
            var received: [String] = []
            for await line in lines { received.append(line) }
            return received
        }
        if mode == .manual { try await dispatcher.runNext() }  // its start

        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: listener) }

        #expect(error?.kind == .waitTimedOut(after: .milliseconds(200)))
        let summary = error?.summary ?? ""
        #expect(
            summary.contains(
                "Nothing is pending, so no run of the dispatcher's moves it on, and 1 tracked task has not settled: \"listener\" started at TaskDispatchTestingTests/ErrorAdviceTests.swift:\(line)"
            ))
        #expect(summary.contains("Since then each awaits something the dispatcher does not control"))
        #expect(!summary.contains("needs the test to run that work first"))
        #expect(!summary.contains("a delayed task or a sleep still waits for the clock"))
        // The advice: "await it in the test before this call": the test feeds and ends the stream.
        feed.yield("hello")
        feed.finish()
        try await dispatcher.runUntilIdle(waitingUpTo: .seconds(60))
        #expect(try await dispatcher.value(of: listener) == ["hello"])
        try dispatcher.verifyIdle()
    }

    /// The same wait with work pending keeps the advice to run it: the task may wait for that work.
    @Test func valueOfATaskAwaitingPendingWorkStillAdvisesRunningIt() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(200))
        let sleeper = dispatcher.startTask(label: "sleeper") {
            try await dispatcher.clock.sleep(for: .seconds(1))
            return 1
        }
        try await dispatcher.runNext()  // its start
        try await dispatcher.waitForPendingTasks(1)  // its sleep

        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: sleeper) }

        #expect(error?.summary.contains("needs the test to run that work first (runUntilIdle(), advance(by:))") == true)
        try await dispatcher.advance(by: .seconds(1))
        #expect(try await dispatcher.value(of: sleeper) == 1)
    }

    /// `verifyIdle()` names an unfinished task that has not settled as one that awaits other work, which no drain
    /// moves on; its advice to cancel it says to let it end first, and followed so, the check passes.
    @Test func verifyIdleNamesAnUnsettledTaskAndHowToEndIt() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
        let (lines, feed) = AsyncStream.makeStream(of: String.self)
        let listener = dispatcher.startTask(label: "listener") { @concurrent in
            for await _ in lines {}
        }
        try await dispatcher.runNext()  // its start

        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }

        #expect(error?.kind == .unfinishedTasks)
        let summary = error?.summary ?? ""
        #expect(
            summary.contains(
                "\"listener\" has not settled since last seen. If it still runs, try await dispatcher.runUntilIdle() waits for it; a task that awaits something the dispatcher does not control"
            ))
        #expect(summary.contains("or cancel the task and let it end with try await dispatcher.settle()"))
        // Neither a drain nor `value(of:)` moves it on: the message does not offer them for it.
        #expect(!summary.contains("Drive them to the end"))
        listener.cancel()
        try await dispatcher.settle()
        try dispatcher.verifyIdle()
        feed.finish()
    }

    /// `verifyIdle()` with a tracked task asleep on the clock: "cancel them", followed with the `settle()` it names,
    /// leaves the dispatcher idle (a check right after the cancel would find the task still ending).
    @Test func verifyIdleOverASleepingTaskAdvisesSettlingAfterTheCancel() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
        let saver = dispatcher.startTask(label: "save") {
            try await dispatcher.clock.sleep(for: .seconds(5))
        }
        try await dispatcher.runNext()  // its start
        try await dispatcher.waitForPendingTasks(1)  // its sleep

        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }

        #expect(error?.kind == .pendingTasks)
        #expect(error?.summary.contains("cancel them and let them end with try await dispatcher.settle()") == true)
        #expect(error?.summary.contains("has not settled since last seen") == false)  // it waits on the dispatcher
        saver.cancel()
        try await dispatcher.settle()
        try dispatcher.verifyIdle()
    }

    /// `run(untilTaskLabeled:)` stopped by a tracked task that sleeps before it dispatches the task advises async
    /// steps, and moving the clock where the next task waits for it; followed so, the labeled task runs.
    @Test func runUntilLabeledOverASleepingTaskAdvisesMovingTheClockToo() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
        let refresh = dispatcher.startTask(label: "refresh") {
            try await dispatcher.clock.sleep(for: .seconds(1))
            return try await dispatcher.runInBackground(label: "load") { 7 }
        }

        let error = synchronously {
            #expect(throws: ManualDispatcherError.self) { try dispatcher.run(untilTaskLabeled: "load") }
        }

        #expect(error?.kind == .conditionNotMet)
        #expect(
            error?.summary.contains(
                "From async code, step with try await dispatcher.runNext(), which waits for them to dispatch their next task, and check after each step; a step does not move the clock: when the next task waits for it, try await dispatcher.advance(by:) moves it and runs what falls due, and check after that"
            ) == true)
        while !dispatcher.history.contains(where: { $0.task.label == "load" }) {
            try await dispatcher.waitForPendingTasks(1)
            let next = try #require(dispatcher.pendingTasks.first)
            if next.dueTime > dispatcher.now {
                try await dispatcher.advance(by: next.dueTime - dispatcher.now)
            } else {
                try await dispatcher.runNext()
            }
        }
        #expect(try await dispatcher.value(of: refresh) == 7)
        try dispatcher.verifyIdle()
    }

    /// After auto-advance stopped a timer that never ends, the test cancels it, as the error says, and awaits its
    /// task again: `value(of:)` is a call of the test's, so the clock moves on to the task's sleep.
    @Test func valueOfAfterAnAutoAdvanceRunawayMovesTheClockAgain() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance, waitLimit: .seconds(60), runawayLimit: 50)
        let heartbeat = dispatcher.startTask(label: "heartbeat") {
            while true { try await dispatcher.clock.sleep(for: .seconds(1)) }
        }
        let save = dispatcher.startTask(label: "save") {
            try await dispatcher.clock.sleep(for: .seconds(1_000))
            return "saved"
        }

        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: save) }

        #expect(error?.kind == .runawayTasks(limit: 50))
        #expect(error?.summary.contains("cancel it before the end of the test") == true)
        heartbeat.cancel()
        #expect(try await dispatcher.value(of: save) == "saved")
        #expect(dispatcher.now == .seconds(1_000))
        try dispatcher.verifyIdle()
    }

    /// A synchronous advance over a woken tracked task names the async form also as code, to paste.
    @Test func aSynchronousAdvanceNamesItsAsyncFormAsCode() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
        let sleeper = dispatcher.startTask(label: "sleeper") {
            try await dispatcher.clock.sleep(for: .seconds(1))
            try await dispatcher.clock.sleep(for: .seconds(1))
        }
        try await dispatcher.runNext()  // its start
        try await dispatcher.waitForPendingTasks(1)  // its sleep

        let error = synchronously {
            #expect(throws: ManualDispatcherError.self) { try dispatcher.advance(by: .milliseconds(1_500)) }
        }

        #expect(
            error?.summary.contains(
                "try await dispatcher.advance(by: 1.5 s) (in code, try await dispatcher.advance(by: .milliseconds(1500)))"
            ) == true)
        try await dispatcher.advance(by: .milliseconds(1_500))
        try await dispatcher.advance(by: .milliseconds(500))
        try await dispatcher.value(of: sleeper)
        try dispatcher.verifyIdle()
    }
}
