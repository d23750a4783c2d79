import Foundation
import TaskDispatchTesting
import Testing

@testable import TaskDispatch

// An awaitable dispatch whose work the dispatcher releases without running it: before 1.0 the awaiting task stayed
// suspended for ever, with no message (a hang until the test's time limit). The release now ends the await with
// DroppedWorkError, naming the call.

/// A decorator that accepts every task and forwards none: the closure is released inside `dispatch(_:)`.
private struct DroppingDecorator: TaskDispatcher {
    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        TaskHandle(canceller: SpentCanceller())
    }
}

/// A decorator that forwards every task and then cancels it through the handle it got back, as a decorator that
/// coalesces or replaces work might: the closure is released by the dispatcher underneath.
private struct CancellingDecorator: TaskDispatcher {
    let base: any TaskDispatcher

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let handle = self.base.dispatch(task)
        handle.cancel()
        return handle
    }
}

/// A decorator over `OperationQueueDispatcher` that cancels each task's `Operation` itself, behind the dispatcher's
/// back, as `OperationQueue.main.cancelAllOperations()` does on Apple platforms.
private struct OperationCancellingDecorator: TaskDispatcher {
    let base = OperationQueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let handle = self.base.dispatch(task)
        (handle._canceller as? Operation)?.cancel()
        return handle
    }
}

@Suite(.timeLimit(.minutes(1))) struct DroppedWorkTests {
    @Test(arguments: TaskContext.allCases)
    func anAwaitWhoseOperationIsCancelledBehindTheDispatchersBackThrowsDroppedWorkError(_ context: TaskContext)
        async throws
    {
        // Delayed, so the operation cannot have run before it is cancelled. Before the fix the cancelled operation
        // kept its closure (the queue never calls main()), and the await stayed suspended.
        let dispatcher = OperationCancellingDecorator()

        let error = await #expect(throws: DroppedWorkError.self) {
            switch context {
            case .background:
                try await dispatcher.runInBackground(after: .seconds(60), label: "load") { 1 }
            case .foreground:
                try await dispatcher.runOnMainActor(after: .seconds(60), label: "load") { 1 }
            }
        }

        #expect(error?.label == "load")
        // The cancelled background task stopped counting as outstanding at once.
        #expect(await dispatcher.base.waitForBackgroundTasks(timeout: .zero))
    }

    @Test(arguments: TaskContext.allCases)
    func anAwaitWhoseWorkADecoratorDropsThrowsDroppedWorkErrorNamingTheCall(_ context: TaskContext) async {
        let dispatcher = DroppingDecorator()
        let log = AwaitLog()
        let line: UInt = #line

        let error = await #expect(throws: DroppedWorkError.self) {
            switch context {
            case .background:
                try await dispatcher.runInBackground(label: "parse", line: line) { log.record("ran") }
            case .foreground:
                try await dispatcher.runOnMainActor(label: "parse", line: line) { log.record("ran") }
            }
        }

        let method = context == .background ? "runInBackground" : "runOnMainActor"
        #expect(error == DroppedWorkError(method: method, label: "parse", callSite: CallSite(line: line)))
        #expect(
            error?.description
                == "\(method) \"parse\" (TaskDispatchTests/DroppedWorkTests.swift:\(line)) never ran: its dispatcher released the work without running it, so the await cannot get a result. A decorator that cancels or drops the task, a dispatcher that drops it (DispatcherContract finds one), a ManualDispatcher released with the task pending, or a cancelled Operation (OperationQueue.main.cancelAllOperations() on Apple platforms) does this; to stop the work, cancel the awaiting task instead, and the call throws CancellationError."
        )
        #expect(log.events.isEmpty)
    }

    @Test(arguments: ProductionDispatcherKind.allCases, TaskContext.allCases)
    func anAwaitWhoseTaskADecoratorCancelsOnAProductionDispatcherThrowsDroppedWorkError(
        _ kind: ProductionDispatcherKind, _ context: TaskContext
    ) async throws {
        // Delayed by a minute, so the task cannot have started before the decorator cancels it.
        try await Self.expectDropped(
            through: CancellingDecorator(base: kind.makeDispatcher()), after: .seconds(60), context)
    }

    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases, TaskContext.allCases)
    func anAwaitThroughAScopeOverADecoratorThatCancelsItsTaskThrowsDroppedWorkError(
        _ kind: ProductionDispatcherKind, _ context: TaskContext
    ) async throws {
        // The scope holds the work while the dispatcher beneath holds the scope's closure: that closure's release ends
        // the await, and the scope forgets the task.
        let scope = DispatchScope(CancellingDecorator(base: kind.makeDispatcher()))
        try await Self.expectDropped(through: scope, after: .seconds(60), context)
        #expect(scope.liveWorkCount == 0)
        #expect(await scope.waitForBackgroundTasks(timeout: .zero))
    }

    @Test(arguments: TaskContext.allCases)
    func anAwaitWhoseTaskADecoratorCancelsOnAManualDispatcherThrowsDroppedWorkError(_ context: TaskContext)
        async throws
    {
        let manual = ManualDispatcher(waitLimit: .seconds(30))  // manual mode: nothing runs until the test says so
        try await Self.expectDropped(through: CancellingDecorator(base: manual), after: .zero, context)
        #expect(manual.pendingTaskCount == 0)
        try manual.verifyIdle()  // a cancel asked for through the handle is not an error of the dispatcher's
    }

    /// Awaits work of `context` through `dispatcher`, which releases it unrun, and expects `DroppedWorkError`.
    static func expectDropped(
        through dispatcher: some TaskDispatcher, after delay: Duration, _ context: TaskContext
    ) async throws {
        let error = await #expect(throws: DroppedWorkError.self) {
            switch context {
            case .background: try await dispatcher.runInBackground(after: delay, label: "load") { 1 }
            case .foreground: try await dispatcher.runOnMainActor(after: delay, label: "load") { 1 }
            }
        }
        #expect(error?.label == "load")
    }

    @Test func cancellingTheAwaitingTaskStillThrowsCancellationError() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(30))
        let decorated = SignallingDispatcher(base: dispatcher)
        let awaiting = Task { try await decorated.runInBackground(label: "load") { 1 } }
        await decorated.dispatched.reach(1)

        awaiting.cancel()

        await #expect(throws: CancellationError.self) { try await awaiting.value }
        #expect(dispatcher.pendingTaskCount == 0)
    }

    @Test func aTrackedTaskWhoseAwaitADecoratorDropsFinishesWithTheErrorAndTheDrainSettles() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(30))
        let decorated = CancellingDecorator(base: dispatcher)
        let task = dispatcher.startTask(label: "refresh") {
            try await decorated.runInBackground(label: "load") { 1 }
        }

        // The drain settles at once (the task is not left waiting on a dispatch that never comes); the next call
        // reports the error that nothing awaited yet.
        try await dispatcher.runUntilIdle()
        let reported = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.runUntilIdle() }
        #expect(reported?.kind == .unobservedTaskError)
        #expect(reported?.summary.contains("runInBackground \"load\"") == true)
        #expect(reported?.summary.contains("(DroppedWorkError)") == true)
        let error = await #expect(throws: DroppedWorkError.self) { try await dispatcher.value(of: task) }
        #expect(error?.method == "runInBackground")
        #expect(dispatcher.pendingTaskCount == 0)
        try dispatcher.verifyIdle()
    }

    @Test func anAwaitThatRunsIsNotEndedAgainWhenItsClosureIsReleased() async throws {
        // The closure's release after a run finds the await ended: the value arrives, and nothing else happens.
        let dispatcher = QueueDispatcher()
        for round in 0..<200 {
            let value = try await dispatcher.runInBackground(label: "round \(round)") { round }
            #expect(value == round)
        }
    }
}
