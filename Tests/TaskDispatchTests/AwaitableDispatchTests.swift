import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

extension ParkedThreadTests {
    /// `runInBackground` and `runOnMainActor`: values, errors, where the work runs, and cancellation on each side of
    /// the start, on every dispatcher the package ships.
    @Suite(.timeLimit(.minutes(1))) struct AwaitableDispatchTests {
        /// The `ManualDispatcher`s' `waitLimit`: generous, since only a failing test ever spends it.
        static let bound = Duration.seconds(30)

        // MARK: - Values and errors, on every dispatcher

        @Test(arguments: AwaitedDispatcherKind.allCases)
        @MainActor func runInBackgroundReturnsTheValueComputedInTheBackground(_ kind: AwaitedDispatcherKind)
            async throws
        {
            let dispatcher = kind.makeDispatcher()

            let (onMainQueue, sum) = try await dispatcher.runInBackground(label: "sum") { (OnMainQueue.now, 40 + 2) }

            // Off the main actor on the production dispatchers. Auto-drain runs the work inside the dispatch call,
            // and the call is made on the caller's isolation (here the main actor), as `background { }` would be.
            #expect(onMainQueue == (kind == .manualAutoDrain))
            #expect(sum == 42)
            #expect(OnMainQueue.now)  // the awaiting @MainActor test resumed on the main actor
        }

        @Test(arguments: AwaitedDispatcherKind.allCases)
        func runInBackgroundRethrowsTheClosuresError(_ kind: AwaitedDispatcherKind) async throws {
            let dispatcher = kind.makeDispatcher()

            let error = try await #require(throws: ParseFailure.self) {
                try await dispatcher.runInBackground(label: "parse") { () throws -> Int in throw ParseFailure(line: 3) }
            }

            #expect(error == ParseFailure(line: 3))
        }

        @Test(arguments: AwaitedDispatcherKind.allCases)
        func runOnMainActorRunsTheWorkOnTheMainActorAndReturnsItsValue(_ kind: AwaitedDispatcherKind) async throws {
            let dispatcher = kind.makeDispatcher()

            let (onMainQueue, title) = try await dispatcher.runOnMainActor(label: "show") { (OnMainQueue.now, "Swift") }

            #expect(onMainQueue)
            #expect(title == "Swift")
        }

        @Test(arguments: AwaitedDispatcherKind.allCases)
        func runOnMainActorRethrowsTheClosuresError(_ kind: AwaitedDispatcherKind) async throws {
            let dispatcher = kind.makeDispatcher()

            await #expect(throws: ParseFailure(line: 7)) {
                try await dispatcher.runOnMainActor { () throws -> Void in throw ParseFailure(line: 7) }
            }
        }

        // MARK: - What the dispatch carries (ManualDispatcher)

        @Test func theDispatchCarriesItsLabelDelayPriorityAndCallSite() async throws {
            let dispatcher = ManualDispatcher(waitLimit: Self.bound)
            let line = #line + 2
            let awaiting = Task {
                try await dispatcher.runInBackground(priority: .userInitiated, after: .seconds(2), label: "slow") { 1 }
            }
            try await dispatcher.waitForPendingTasks(1, in: .background)

            let task = try #require(dispatcher.pendingTasks.first)
            #expect(task.label == "slow")
            #expect(task.priority == .userInitiated)
            #expect(task.dueTime == .seconds(2))
            #expect(
                task.callSite == CallSite(fileID: "TaskDispatchTests/AwaitableDispatchTests.swift", line: UInt(line)))

            try await dispatcher.advance(by: .seconds(2))
            #expect(try await awaiting.value == 1)
            try dispatcher.verifyIdle()
        }

        @Test @MainActor func aStepRunsTheAwaitedWorkAndTheAwaitingTaskResumesWithItsValue() async throws {
            let dispatcher = ManualDispatcher(waitLimit: Self.bound)
            let awaiting = Task { @MainActor in
                let parsed = try await dispatcher.runInBackground(label: "parse") { [3, 2, 1] }
                return try await dispatcher.runOnMainActor(label: "show") { parsed.count }
            }

            let parse = try await dispatcher.runNextBackground()
            let show = try await dispatcher.runNextForeground()

            #expect(parse.task.label == "parse")
            #expect(show.task.label == "show")
            #expect(try await awaiting.value == 3)
            try dispatcher.verifyIdle()
        }

        // MARK: - Cancellation

        @Test func cancellingBeforeTheStartCancelsTheBackgroundTaskAndThrows() async throws {
            let dispatcher = ManualDispatcher(waitLimit: Self.bound)
            let log = AwaitLog()
            let awaiting = Task { try await dispatcher.runInBackground(label: "parse") { log.record("ran") } }
            try await dispatcher.waitForPendingTasks(1, in: .background)

            awaiting.cancel()

            await #expect(throws: CancellationError.self) { try await awaiting.value }
            #expect(dispatcher.pendingTaskCount == 0)  // the dispatched task was cancelled with the awaiting task
            #expect(try await dispatcher.runUntilIdle() == 0)
            #expect(log.events.isEmpty)
        }

        @Test func cancellingBeforeTheStartCancelsTheForegroundTaskAndThrows() async throws {
            let dispatcher = ManualDispatcher(waitLimit: Self.bound)
            let log = AwaitLog()
            let awaiting = Task { try await dispatcher.runOnMainActor(label: "show") { log.record("ran") } }
            try await dispatcher.waitForPendingTasks(1, in: .foreground)

            awaiting.cancel()

            await #expect(throws: CancellationError.self) { try await awaiting.value }
            #expect(dispatcher.pendingTaskCount == 0)
            #expect(log.events.isEmpty)
        }

        @Test func aTaskThatStartedRunsToTheEndAndTheAwaitReturnsItsValue() async throws {
            let dispatcher = ManualDispatcher(waitLimit: Self.bound)
            let awaitingTask = AwaitBox<Task<Int, any Error>?>(nil)
            let log = AwaitLog()
            let awaiting = Task {
                try await dispatcher.runInBackground(label: "commit") {
                    awaitingTask.value?.cancel()  // cancelled while the work runs
                    log.record("finished")
                    return 7
                }
            }
            awaitingTask.value = awaiting

            try await dispatcher.runNextBackground()

            #expect(try await awaiting.value == 7)
            #expect(awaiting.isCancelled)
            #expect(log.events == ["finished"])
        }

        @Test func aTaskCancelledBeforeTheCallDispatchesNothing() async throws {
            let dispatcher = ManualDispatcher()
            let awaiting = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await dispatcher.runInBackground(label: "never") { 1 }
            }

            await #expect(throws: CancellationError.self) { try await awaiting.value }
            #expect(dispatcher.pendingTaskCount == 0)
            #expect(dispatcher.history.isEmpty)
        }

        @Test func cancellingBeforeTheStartOnAQueueDispatcherDropsTheTask() async throws {
            let queue = DispatchQueue(label: "AwaitableDispatchTests.serial")
            let gate = DispatchSemaphore(value: 0)
            queue.async { _ = gate.wait(timeout: .now() + .seconds(30)) }  // holds the queue until the cancel is done
            try await Self.expectCancelBeforeStart(
                on: SignallingDispatcher(base: QueueDispatcher(backgroundQueue: queue))
            ) {
                gate.signal()
            }
        }

        @Test func cancellingBeforeTheStartOnAnOperationQueueDispatcherDropsTheTask() async throws {
            let base = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 1)
            let gate = DispatchSemaphore(value: 0)
            base.background { _ = gate.wait(timeout: .now() + .seconds(30)) }  // occupies the only slot
            try await Self.expectCancelBeforeStart(on: SignallingDispatcher(base: base)) { gate.signal() }
            #expect(await Self.backgroundTasksFinished(base))
        }

        /// Starts an awaitable background run on `dispatcher`, whose background is held busy until `release`;
        /// cancels the awaiting task once the dispatch happened, then releases the queue. The work must never run.
        static func expectCancelBeforeStart(
            on dispatcher: SignallingDispatcher,
            release: @Sendable () -> Void
        ) async throws {
            let log = AwaitLog()
            let awaiting = Task { try await dispatcher.runInBackground(label: "held") { log.record("ran") } }
            await dispatcher.dispatched.reach(1)

            awaiting.cancel()
            await #expect(throws: CancellationError.self) { try await awaiting.value }
            release()
            try await dispatcher.base.runInBackground(label: "after") {}  // runs after the cancelled task's turn
            #expect(log.events.isEmpty)
        }

        static func backgroundTasksFinished(_ dispatcher: OperationQueueDispatcher) async -> Bool {
            await dispatcher.waitForBackgroundTasks()
            return true
        }
    }
}

extension ParkedThreadTests {
    /// The bridge scenario 200 times in a row, in parallel (Swift Testing runs the cases concurrently): a background
    /// run and a main-actor run, stepped by the test; odd rounds cancel the awaiting task before the foreground step.
    @Suite(.timeLimit(.minutes(2))) struct AwaitableDispatchRepetitionTests {
        @Test(arguments: 0..<200) func stepAndCancelAwaitableRuns(round: Int) async throws {
            let dispatcher = ManualDispatcher(waitLimit: AwaitableDispatchTests.bound)
            let awaiting = Task {
                let doubled = try await dispatcher.runInBackground(label: "double") { round * 2 }
                return try await dispatcher.runOnMainActor(label: "show") { doubled + 1 }
            }

            let double = try await dispatcher.runNextBackground()
            #expect(double.task.label == "double")

            if round.isMultiple(of: 2) {
                try await dispatcher.runNextForeground()
                #expect(try await awaiting.value == round * 2 + 1)
            } else {
                try await dispatcher.waitForPendingTasks(1, in: .foreground)
                awaiting.cancel()
                await #expect(throws: CancellationError.self) { try await awaiting.value }
                #expect(try await dispatcher.runUntilIdle() == 0)
            }
            try dispatcher.verifyIdle()
        }
    }
}
