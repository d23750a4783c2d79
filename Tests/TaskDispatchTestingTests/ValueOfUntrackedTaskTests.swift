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

    @Test func aTaskOfAnotherDispatcherThatNeedsItsStepsEndsAtTheWaitLimit() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(100))
        let other = ManualDispatcher()
        let task = other.startTask(label: "elsewhere") { 7 }  // its start waits for a step of `other`

        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: task) }

        #expect(error?.kind == .waitTimedOut(after: .milliseconds(100)))
        #expect(
            error?.summary
                == "value(of:) waited 100 ms of real time for a task this dispatcher did not start (a plain Task, or one another ManualDispatcher started), and it did not finish. This dispatcher runs nothing that task waits for: await it with try await task.value, or call value(of:) on the ManualDispatcher that started it"
        )
        // The task goes on: its own dispatcher drives it.
        try await other.runUntilIdle()
        #expect(try await other.value(of: task) == 7)
        try dispatcher.verifyIdle()
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
