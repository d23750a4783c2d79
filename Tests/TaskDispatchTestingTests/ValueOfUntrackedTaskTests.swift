import TaskDispatchTesting
import Testing

// `value(of:)` given a task its dispatcher did not start: a plain `Task`, or one another ManualDispatcher started.
// Before 1.0 it awaited such a task without a bound, so a task that waited on the other dispatcher hung the test with
// no message; it now waits within the dispatcher's `waitLimit`, like every other wait.

@Suite(.timeLimit(.minutes(1))) struct ValueOfUntrackedTaskTests {
    struct Failure: Error, Equatable {}

    @Test func aPlainTaskThatFinishesGivesItsValue() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(30))
        let plain = Task<Int, any Error> { 42 }
        #expect(try await dispatcher.value(of: plain) == 42)
        try dispatcher.verifyIdle()
    }

    @Test func aPlainTaskThatThrowsRethrows() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(30))
        let plain = Task<Int, any Error> { throw Failure() }
        await #expect(throws: Failure()) { try await dispatcher.value(of: plain) }
    }

    /// A plain `Task` that waits for this dispatcher's pending work: the message points at that work and `startTask`,
    /// rather than say that this dispatcher runs nothing the task waits for.
    @Test func aPlainTaskWaitingForPendingWorkIsToldToRunIt() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(100))
        let plain = Task<Int, Never> {
            await withCheckedContinuation { done in
                dispatcher.background(label: "fetch") { done.resume(returning: 7) }
            }
        }
        try await dispatcher.waitForPendingTasks(1)
        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: plain) }
        #expect(error?.kind == .waitTimedOut(after: .milliseconds(100)))
        #expect(
            error?.summary.contains(
                "and it did not finish. If that task waits for this dispatcher's work (1 task pending, listed below: a sleep on its clock, say), this wait does not run it: run that work before this call, or start the task with dispatcher.startTask, whose waits the drains run. Otherwise: await a plain Task with try await task.value;"
            ) == true, "\(error?.summary ?? "")")
        #expect(error?.pendingTasks.map(\.label) == ["fetch"])
        try await dispatcher.runUntilIdle()
        #expect(try await dispatcher.value(of: plain) == 7)
        try dispatcher.verifyIdle()
    }

    @Test func aTaskOfAnotherDispatcherThatNeedsItsStepsEndsAtTheWaitLimit() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(100))
        let other = ManualDispatcher()
        let task = other.startTask(label: "elsewhere") { 7 }  // its start waits for a step of `other`

        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: task) }

        #expect(error?.kind == .waitTimedOut(after: .milliseconds(100)))
        #expect(
            error?.summary
                == "value(of:) waited 100 ms of real time for a task this dispatcher did not start (a plain Task, or one another ManualDispatcher started), and it did not finish. This dispatcher runs nothing that task waits for: await a plain Task with try await task.value; await one another ManualDispatcher started with value(of:) on that dispatcher, and drive that one (its runs, or an auto mode)"
        )
        // The task goes on: its own dispatcher drives it.
        try await other.runUntilIdle()
        #expect(try await other.value(of: task) == 7)
        try dispatcher.verifyIdle()
    }

    @Test func anOwnTaskThatFinishedGivesItsValueEvenToACancelledCaller() async throws {
        // Its record is gone once it finished cleanly, but the dispatcher still knows it for its own: its value comes
        // at once, as before the bound, not through the bounded wait a cancellation would end.
        let dispatcher = ManualDispatcher(waitLimit: .seconds(30))
        let task = dispatcher.startTask(label: "done") { 7 }
        try await dispatcher.runUntilIdle()
        let caller = Task { try await dispatcher.value(of: task) }
        caller.cancel()
        #expect(try await caller.value == 7)
    }

    @Test func anOwnTaskThatFinishedGivesItsValueWhateverTheLimit() async throws {
        // With the tiniest limit, the bounded wait's timer could beat the finished task's value.
        for round in 0..<50 {
            let dispatcher = ManualDispatcher(waitLimit: .nanoseconds(1))
            let task = dispatcher.startTask(label: "done") { round }
            _ = try await dispatcher.runNext()  // its start
            _ = await task.result  // finished, and its record gone
            #expect(try await dispatcher.value(of: task) == round)
        }
    }

    @Test func cancellingTheCallerEndsTheWait() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(30))
        let (gate, opening) = AsyncStream<Void>.makeStream()
        let never = Task<Int, any Error> {
            for await _ in gate {}
            return 1
        }
        let caller = Task { try await dispatcher.value(of: never) }

        caller.cancel()

        await #expect(throws: CancellationError.self) { try await caller.value }
        opening.finish()
        #expect(try await never.value == 1)
    }
}

/// `value(of:)` for a task that cannot throw: bounded by the wait limit as for any task the dispatcher did not
/// start, where `await task.value` would wait without a bound.
@Suite struct ValueOfNonThrowingTaskTests {
    @Test func aNonThrowingTaskThatFinishesGivesItsValue() async throws {
        let dispatcher = ManualDispatcher()
        let task = Task { () async -> Int in
            (try? await dispatcher.runInBackground(label: "compute") { 42 }) ?? -1
        }
        try await dispatcher.runNextBackground()
        #expect(try await dispatcher.value(of: task) == 42)
        try dispatcher.verifyIdle()
    }

    @Test func aNonThrowingTaskThatNeverFinishesTimesOutWithinTheLimit() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(300))
        let (never, _) = AsyncStream<Int>.makeStream()
        let task = Task { () async -> Int in
            for await value in never { return value }  // nothing ever yields
            return -1
        }
        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: task) }
        #expect(error?.kind == .waitTimedOut(after: .milliseconds(300)))
        task.cancel()
    }
}
