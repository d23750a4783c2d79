import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

/// What the dispatcher says about a tracked task that was cancelled and has not ended, or that loops without
/// suspending. Two probes found the messages wrong there: they told the test to cancel a task it had just cancelled,
/// and to send through the dispatcher a sleep that already went through it.
@Suite struct CancelledTaskMessageTests {
    /// `verifyIdle()` right after a cancel: the task is marked cancelled, and the advice is to let it end first.
    @Test func verifyIdleRightAfterACancelSaysSoAndToSettleFirst() async throws {
        let dispatcher = ManualDispatcher()
        let ending = ArrivalCounter()  // holds the task's end until the check has run
        let line = #line + 1
        let loop = dispatcher.startTask(label: "timer") { @concurrent in
            do {
                while true { try await dispatcher.clock.sleep(for: .seconds(1)) }
            } catch {
                await ending.reach(1)
                throw error
            }
        }
        try await dispatcher.advance(by: .seconds(2))
        loop.cancel()
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error.kind == .unfinishedTasks)
        #expect(
            error.summary.contains(
                "\"timer\" started at TaskDispatchTestingTests/CancelledTaskMessageTests.swift:\(line) (cancelled): last seen, its wait on a sleep on the dispatcher's clock (\"timer: clock sleep until 3 s\") ended with CancellationError"
            ))
        #expect(
            error.summary.contains(
                "It was cancelled and has not ended yet. Right after a cancel, let it end before the check with try await dispatcher.settle()"
            ))
        #expect(!error.summary.contains("or cancel them"))
        ending.signal()
        try await dispatcher.settle()
        try dispatcher.verifyIdle()
    }

    /// A cancelled loop that swallows the error (`try?`) goes round through sleeps that throw at once: the drain
    /// names it as looping, not as awaiting work the dispatcher does not control. (Each turn also hops through
    /// another thread, as a loop that does some other async work would, so the loop leaves the test's threads free:
    /// two loops that never suspend held both threads of a 2-core machine, and the test run hung.)
    @Test(.timeLimit(.minutes(1))) func aCancelledLoopThatSwallowsTheErrorIsNamedAsLooping() async throws {
        let dispatcher = ManualDispatcher()
        let stop = Locked(false)
        let turns = ArrivalCounter()
        let poll = dispatcher.startTask(label: "poll") { @concurrent in
            while !stop.withLock({ $0 }) {
                try? await dispatcher.clock.sleep(for: .seconds(1))
                await hopThroughAnotherThread()
                turns.signal()
            }
        }
        try await dispatcher.advance(by: .seconds(2))
        poll.cancel()
        // Two sleeps at least have returned at once before the short drain, however slow the machine.
        await turns.reach(turns.value + 3)
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runUntilIdle(waitingUpTo: .milliseconds(200))
        }
        stop.withLock { $0 = true }
        let summary = try #require(error?.summary)
        #expect(summary.contains("\"poll\" started at "))
        #expect(summary.contains(" (cancelled): last seen, "))
        #expect(
            summary.contains(
                "\"poll\" loops on sleeps or awaitable dispatches that end at once, without waiting on the dispatcher. In a cancelled task each sleep on dispatcher.clock and each awaitable dispatch throws CancellationError at once"
            ))
        #expect(!summary.contains("does not control"))
        try await dispatcher.settle()
        try dispatcher.verifyIdle()
    }

    /// A loop of sleeps for no time never waits on the dispatcher: the drain says its sleeps return at once.
    @Test(.timeLimit(.minutes(1))) func aLoopOfSleepsForNoTimeIsNamedForWhatItDoes() async throws {
        let dispatcher = ManualDispatcher()
        let stop = Locked(false)
        let turns = ArrivalCounter()
        dispatcher.startTask(label: "ticker") { @concurrent in
            while !stop.withLock({ $0 }) {
                try await dispatcher.clock.sleep(for: .zero)
                await hopThroughAnotherThread()
                turns.signal()
            }
        }
        // Its start run, and two sleeps at least returned at once before the short drain, however slow the machine.
        try await dispatcher.runNext()
        await turns.reach(2)
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runUntilIdle(waitingUpTo: .milliseconds(200))
        }
        stop.withLock { $0 = true }
        let summary = try #require(error?.summary)
        #expect(
            summary.contains(
                "last seen, it slept on the dispatcher's clock until 0 s, a time that had come, so the sleep returned at once without suspending"
            ))
        #expect(summary.contains("\"ticker\" loops on sleeps or awaitable dispatches that end at once"))
        #expect(!summary.contains(" (cancelled)"))
        #expect(!summary.contains("does not control"))
        try await dispatcher.settle()
        try dispatcher.verifyIdle()
    }

    /// A cancelled task that awaits work that ignores cancellation, after one sleep that ended with the cancel, is
    /// not called a loop: it awaits something the dispatcher does not control (a review found the loop advice
    /// given to it).
    @Test func aCancelledTaskAwaitingOtherWorkIsNotCalledALoop() async throws {
        let dispatcher = ManualDispatcher()
        let download = ArrivalCounter()
        let task = dispatcher.startTask(label: "fetch") { @concurrent in
            try? await dispatcher.clock.sleep(for: .seconds(1))
            await download.reach(1)  // ignores cancellation
        }
        try await dispatcher.settle()  // asleep
        task.cancel()
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.settle(waitingUpTo: .milliseconds(200))
        }
        download.signal()
        let summary = try #require(error?.summary)
        #expect(summary.contains("\"fetch\" started at "))
        #expect(summary.contains(" (cancelled): last seen, its wait on a sleep"))
        #expect(
            summary.contains(
                "Since then each awaits something the dispatcher does not control (a task marked cancelled awaits work that does not end when it is cancelled)"
            ))
        #expect(!summary.contains("loops on"))
        _ = await task.result
        try dispatcher.verifyIdle()
    }

    /// A tracked task awaiting a continuation that a delayed task of the same dispatcher resumes: the drain cannot
    /// see that wait, so it never moves the clock to the callback; the message says so and what to use instead (a
    /// probe got "send that work through the dispatcher", though it was pending there).
    @Test func aContinuationResumedByADelayedTaskIsExplained() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "callback") { @concurrent in
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                dispatcher.background(after: .seconds(1), label: "fetch-cb") { continuation.resume() }
            }
        }
        // The callback is pending before the short drain, however slow the machine.
        try await dispatcher.runNext()
        try await dispatcher.waitForPendingTasks(1)
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runUntilIdle(waitingUpTo: .milliseconds(200))
        }
        let summary = try #require(error?.summary)
        #expect(
            summary.contains(
                "A continuation resumed by one of this dispatcher's delayed tasks (a callback API wrapped in withCheckedContinuation) counts as such work too"
            ))
        #expect(summary.contains("Await the work with runInBackground(after:) or a sleep on dispatcher.clock instead"))
        // The synchronous step moves the clock whatever the task's state, and runs the callback.
        try synchronously { try dispatcher.advance(by: .seconds(1)) }
        try await dispatcher.value(of: task)
        try dispatcher.verifyIdle()
    }

    /// The test's own sleep that began after its advance: the message says the clock's time and how to wait for
    /// such a sleep first (a probe's `async let` then `advance(by:)` got "advance the clock before the limit",
    /// which it had done).
    @Test func aSleepThatBeganAfterTheAdvanceIsExplained() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(200))
        try await dispatcher.advance(by: .seconds(1))
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.clock.sleep(for: .seconds(1))
        }
        let summary = try #require(error?.summary)
        #expect(summary.contains("It was still waiting for the clock, at 1 s,"))
        #expect(
            summary.contains(
                "wait for the sleep first with try await dispatcher.waitForPendingTasks(1), then advance"))
        #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }  // the cancelled sleep, reported
    }
}

/// Suspends until another thread resumes the task: async work the dispatcher does not see, which frees the thread.
private func hopThroughAnotherThread() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().async { continuation.resume() }
    }
}
