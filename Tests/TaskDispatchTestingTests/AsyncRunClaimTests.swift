import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

/// An async run method that finds another thread's run in progress suspends until that run ends, on the main actor
/// too, where a synchronous one throws `concurrentRun` rather than block.
///
/// Each test holds the other run inside a task that blocks on a semaphore, on a thread of its own, and opens it
/// only once the async call has registered its wait: so the call meets the run in progress every time, with no
/// timing involved.
@Suite(.timeLimit(.minutes(1))) struct AsyncRunClaimTests {
    /// The async run methods, each called once the other thread's run holds the claim.
    enum Method: String, CaseIterable, CustomTestStringConvertible {
        case runUntilIdle, settle, advanceBy, advanceTo, runNext, runNextForeground

        var testDescription: String { self.rawValue }

        /// Calls the method on `dispatcher`, which holds one foreground task "ui" besides the blocked one, on the
        /// caller's actor.
        nonisolated(nonsending) func call(on dispatcher: ManualDispatcher, waitingUpTo limit: Duration? = nil)
            async throws
        {
            switch self {
            case .runUntilIdle: try await dispatcher.runUntilIdle(waitingUpTo: limit)
            case .settle: try await dispatcher.settle(waitingUpTo: limit)
            case .advanceBy: try await dispatcher.advance(by: .seconds(1), waitingUpTo: limit)
            case .advanceTo: try await dispatcher.advance(to: .seconds(1), waitingUpTo: limit)
            case .runNext: try await dispatcher.runNext(waitingUpTo: limit)
            case .runNextForeground: try await dispatcher.runNextForeground(waitingUpTo: limit)
            }
        }
    }

    /// A task "slow" that blocks its thread until `open()`, so that the run that runs it holds the claim till then.
    final class HeldRun: Sendable {
        let gate = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        let log = EventLog()

        func dispatchSlowTask(on dispatcher: ManualDispatcher, after delay: Duration = .zero) {
            dispatcher.background(after: delay, label: "slow") { [gate, entered, log] in
                entered.signal()
                _ = gate.wait(timeout: .now() + 60)
                log.record("slow")
            }
        }

        /// Dispatches "slow" and a foreground task "ui", and steps "slow" with `runNextBackground()` on a thread of
        /// its own; returns once "slow" has started there, with the step's result to come.
        func stepSlowTaskElsewhere(on dispatcher: ManualDispatcher) -> BackgroundCall<String?> {
            self.dispatchSlowTask(on: dispatcher)
            dispatcher.foreground(label: "ui") { [log] in log.record("ui") }
            let step = BackgroundCall { try dispatcher.runNextBackground().task.label }
            #expect(self.waitUntilEntered())
            return step
        }

        /// Waits, with a generous bound, until the slow task has started on the other thread.
        func waitUntilEntered() -> Bool {
            self.entered.wait(timeout: .now() + 60) == .success
        }

        func open() {
            self.gate.signal()
        }
    }

    /// Starts `runUntilIdle()` in a task off the main actor, and returns once the call has registered its wait.
    static func drainThatWaits(on dispatcher: ManualDispatcher) async -> Task<Int, any Error> {
        let registered = dispatcher.countingWaiterRegistrations()
        let drain = Task { try await dispatcher.runUntilIdle() }
        await registered.reach(1)
        return drain
    }

    @MainActor
    @Test(arguments: Method.allCases)
    func anAsyncRunMethodOnTheMainActorWaitsForAnotherThreadsRun(_ method: Method) async throws {
        let dispatcher = ManualDispatcher()
        let held = HeldRun()
        let step = held.stepSlowTaskElsewhere(on: dispatcher)
        dispatcher.observeWaiterRegistrations { held.open() }

        try await method.call(on: dispatcher)

        #expect(try step.value() == "slow")
        #expect(held.log.events == ["slow", "ui"])
        #expect(dispatcher.waiterCount == 0)
        dispatcher.checkInvariants()
        try dispatcher.verifyIdle()
    }

    @Test func anAsyncRunMethodOffTheMainActorSuspendsInsteadOfBlockingItsThread() async throws {
        let dispatcher = ManualDispatcher()
        let held = HeldRun()
        let step = held.stepSlowTaskElsewhere(on: dispatcher)
        let drain = await Self.drainThatWaits(on: dispatcher)  // it suspended: a blocked call would never register
        #expect(dispatcher.waiterCount == 1)
        dispatcher.checkInvariants()
        held.open()

        #expect(try await drain.value == 1)
        #expect(try step.value() == "slow")
        #expect(held.log.events == ["slow", "ui"])
        try dispatcher.verifyIdle()
    }

    @MainActor
    @Test func anAsyncDrainWaitsForAnAutoDrainOnAnotherThread() async throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let held = HeldRun()
        // The dispatch runs the task at once, inside the auto-drain it starts on that thread.
        let dispatching = BackgroundCall { held.dispatchSlowTask(on: dispatcher) }
        #expect(held.waitUntilEntered())
        dispatcher.observeWaiterRegistrations { held.open() }

        #expect(try await dispatcher.runUntilIdle() == 0)

        #expect(try dispatching.value() != nil)
        #expect(held.log.events == ["slow"])
        try dispatcher.verifyIdle()
    }

    @MainActor
    @Test func anAsyncDrainWaitsForAnAutoAdvanceOnAnotherThread() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)
        let held = HeldRun()
        let dispatching = BackgroundCall { held.dispatchSlowTask(on: dispatcher, after: .seconds(5)) }
        #expect(held.waitUntilEntered())
        dispatcher.observeWaiterRegistrations { held.open() }

        #expect(try await dispatcher.runUntilIdle() == 0)

        #expect(try dispatching.value() != nil)
        #expect(dispatcher.now == .seconds(5))
        #expect(held.log.events == ["slow"])
        try dispatcher.verifyIdle()
    }

    @MainActor
    @Test func anAsyncRunMethodThatWaitsPastItsLimitThrowsConcurrentRun() async throws {
        let dispatcher = ManualDispatcher()
        let held = HeldRun()
        let step = held.stepSlowTaskElsewhere(on: dispatcher)

        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runUntilIdle(waitingUpTo: .milliseconds(50))
        }

        #expect(error?.kind == .concurrentRun)
        #expect(
            error?.summary
                == "runUntilIdle(waitingUpTo: 50 ms) could not run tasks within its limit of 50 ms of real time: another "
                + "thread's run (runNextBackground()) is still running (executing task #1 background \"slow\" at "
                + "TaskDispatchTestingTests/AsyncRunClaimTests.swift:42, ran at 0 s). Run tasks from one place at a "
                + "time, or raise "
                + "the dispatcher's waitLimit if that run is expected to take longer (and leave waitingUpTo: out)"
        )
        #expect(dispatcher.waiterCount == 0)
        held.open()
        #expect(try step.value() == "slow")
        // Nothing was lost: the task the failed call did not reach is still there for the next one.
        #expect(try await dispatcher.runUntilIdle() == 1)
        #expect(held.log.events == ["slow", "ui"])
    }

    @Test func cancellingAnAsyncRunMethodThatWaitsForAnotherThreadsRunLeavesNoWaiter() async throws {
        let dispatcher = ManualDispatcher()
        let held = HeldRun()
        let step = held.stepSlowTaskElsewhere(on: dispatcher)
        let drain = await Self.drainThatWaits(on: dispatcher)
        drain.cancel()

        await #expect(throws: CancellationError.self) { try await drain.value }
        #expect(dispatcher.waiterCount == 0)
        held.open()
        #expect(try step.value() == "slow")
        #expect(try await dispatcher.runUntilIdle() == 1)
        #expect(held.log.events == ["slow", "ui"])
    }

    @Test func anAsyncRunMethodFromATaskBegunInsideARunningTaskIsStillRefusedAsReentrant() async throws {
        guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else { return }
        let dispatcher = ManualDispatcher()
        let result = Locked<Task<ManualDispatcherError?, Never>?>(nil)
        // `Task.immediate` runs the task's first part inside the step below, on the step's thread, which holds the
        // claim: waiting for the claim there would wait for itself.
        dispatcher.background {
            let task = Task.immediate { () async -> ManualDispatcherError? in
                do {
                    try await dispatcher.runUntilIdle()
                    return nil
                } catch {
                    return error as? ManualDispatcherError
                }
            }
            result.withLock { $0 = task }
        }
        try await dispatcher.runNextBackground()
        let task = try #require(result.withLock { $0 })
        let error = try #require(await task.value)
        #expect(error.kind == .reentrantRun)
        #expect(dispatcher.waiterCount == 0)
        try dispatcher.verifyIdle()
    }
}
