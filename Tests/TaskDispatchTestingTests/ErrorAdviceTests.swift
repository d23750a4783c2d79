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
                "\"listener\" has not settled since last seen: it runs, or awaits something the dispatcher does not control"
            ))
        #expect(summary.contains("or cancel them and let them end with try await dispatcher.settle()"))
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
