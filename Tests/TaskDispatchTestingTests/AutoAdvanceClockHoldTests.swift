import Synchronization
import TaskDispatch
import TaskDispatchTesting
import Testing

/// In auto-advance, a tracked task moves the clock only while the test awaits the dispatcher (`ClockHold`): the
/// clock does not move behind the test's back while it is still setting up, say between two `startTask` calls.
///
/// Before, the first task's sleep moved the clock as soon as it settled, so a second task the test started a
/// moment later began at 1 s and woke at 3 s instead of 2 s: seen in CI in 9 runs of 20 of
/// `ChildTaskSettlingOffTheMainActorTests.twoChildrenAwaitTwoTrackedTasksAtOnce`.
@Suite struct AutoAdvanceClockHoldTests {
    /// The first task sleeps before the test starts the second: the clock waits for the test's `value(of:)`.
    @Test func aTrackedTaskDoesNotMoveTheClockWhileTheTestStartsAnother() async throws {
        for run in 0..<20 {
            let dispatcher = ManualDispatcher(mode: .autoAdvance, waitLimit: .seconds(60))
            let first = dispatcher.startTask(label: "first") { () async throws -> Duration in
                try await dispatcher.clock.sleep(for: .seconds(1))
                return dispatcher.now
            }
            // The first task's sleep is pending, so it has settled, and nothing else is running: before, the clock
            // had jumped (or was about to, on the task's thread).
            try await dispatcher.waitForPendingTasks(1)
            #expect(dispatcher.now == .zero, "run \(run)")
            let second = dispatcher.startTask(label: "second") { () async throws -> Duration in
                try await dispatcher.clock.sleep(for: .seconds(2))
                return dispatcher.now
            }
            #expect(try await dispatcher.value(of: first) == .seconds(1), "run \(run)")
            #expect(try await dispatcher.value(of: second) == .seconds(2), "run \(run)")
            #expect(dispatcher.now == .seconds(2), "run \(run)")
            #expect(dispatcher.clockHoldsTimedOut == 0, "run \(run)")
            try dispatcher.verifyIdle()
        }
    }

    /// A timer that never stops, in a tracked task, does not run the clock away before the test awaits anything.
    @Test func aTimerInATrackedTaskWaitsForTheTest() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance, waitLimit: .seconds(60))
        let ticks = Atomic(0)
        let timer = dispatcher.startTask(label: "timer") {
            while true {
                try await dispatcher.clock.sleep(for: .seconds(1))
                ticks.add(1, ordering: .relaxed)
            }
        }
        try await dispatcher.waitForPendingTasks(1)
        #expect(dispatcher.now == .zero)
        #expect(ticks.load(ordering: .relaxed) == 0)
        timer.cancel()
        await #expect(throws: CancellationError.self) { try await dispatcher.value(of: timer) }
        #expect(ticks.load(ordering: .relaxed) == 0)
        try dispatcher.verifyIdle()
    }

    /// The test's own call moves the clock at once, as before: a dispatch of a delayed task, from the test, runs it.
    @Test func aDelayedDispatchFromTheTestStillRunsAtOnce() throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)
        let ran = Atomic(false)
        dispatcher.background(after: .seconds(5), label: "later") { ran.store(true, ordering: .relaxed) }
        #expect(ran.load(ordering: .relaxed) == true)
        #expect(dispatcher.now == .seconds(5))
    }

    /// A test that awaits a tracked task's `task.value` itself, which the dispatcher cannot see, is not left
    /// waiting for good: the hold ends after the wait limit, the clock moves, and from then on it moves without
    /// waiting for the test.
    @Test func aHoldEndsAfterTheWaitLimitWhenTheTestAwaitsSomethingElse() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance, waitLimit: .milliseconds(200))
        let task = dispatcher.startTask(label: "retries") { () async throws -> Duration in
            try await dispatcher.clock.sleep(for: .seconds(1))
            try await dispatcher.clock.sleep(for: .seconds(2))
            try await dispatcher.clock.sleep(for: .seconds(4))
            return dispatcher.now
        }
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try await task.value == .seconds(7))
        // One hold ended by its timer; the next sleeps did not wait again.
        #expect(dispatcher.clockHoldsTimedOut == 1)
        #expect(clock.now - start < .seconds(30))
        try dispatcher.verifyIdle()
    }
}
