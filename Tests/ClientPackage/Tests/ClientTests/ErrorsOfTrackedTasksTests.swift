// Issue 33, items 2 and 6, from outside the package: a tracked task's error after a drain, and app code (imports only
// TaskDispatch) that awaits a started task it shares between callers.
import TaskDispatchTesting
import Testing

private enum FetchError: Error {
    case badData
}

/// A user's decorator, written from the protocol's documentation: it forwards `dispatch(_:)`, the clock,
/// `startTask` and `value(of:)`.
private struct ForwardingValueDispatcher<Base: TaskDispatcher>: TaskDispatcher {
    let base: Base

    var clock: Base.DispatcherClock { base.clock }

    func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        base.startTask(label: label, callSite: callSite, operation: operation)
    }

    func value<Success: Sendable>(of task: Task<Success, any Error>) async throws -> Success {
        try await base.value(of: task)
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        base.dispatch(task)
    }
}

@Suite struct ErrorsOfTrackedTasksTests {
    /// Item 2: the start (a step, or the dispatcher itself), a drain, then the outcome: in every mode, off and on the
    /// main actor, whether the task failed before the drain began or while it ran.
    @Test(arguments: [ManualDispatcher.Mode.manual, .autoDrain, .autoAdvance])
    func anErrorStaysClaimableAfterTheDrainThatSawIt(mode: ManualDispatcher.Mode) async throws {
        for onMainActor in [false, true] {
            let dispatcher = ManualDispatcher(mode: mode)
            let task =
                onMainActor
                ? dispatcher.startTask(label: "load") { @MainActor () async throws -> Int in throw FetchError.badData }
                : dispatcher.startTask(label: "load") { () async throws -> Int in throw FetchError.badData }
            if mode == .manual { try await dispatcher.runNext() }  // the start: the task fails on its own
            try await dispatcher.runUntilIdle()
            await #expect(throws: FetchError.badData) { try await dispatcher.value(of: task) }
            try dispatcher.verifyIdle()
        }
    }

    /// Item 2: nothing claims it, so the call after the drain reports it, with the task's label and call site.
    @Test func theCallAfterTheDrainReportsAnErrorNothingClaimed() async throws {
        let dispatcher = ManualDispatcher()
        let line = #line + 1
        _ = dispatcher.startTask(label: "load") { () async throws -> Int in throw FetchError.badData }
        try await dispatcher.runUntilIdle()
        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.runUntilIdle() }
        #expect(error?.kind == .unobservedTaskError)
        #expect(
            error?.summary.contains("\"load\" started at ClientTests/ErrorsOfTrackedTasksTests.swift:\(line)") == true,
            "\(String(describing: error))")
        try dispatcher.verifyIdle()
    }

    /// Item 6: the test awaits the app code itself; the cache's `dispatcher.value(of:)` claims the download's error,
    /// directly or through a decorator that forwards it.
    @Test(arguments: [false, true])
    func theTestAwaitingTheCacheGetsTheErrorAndNothingIsReported(throughADecorator: Bool) async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)
        let injected: any TaskDispatcher = throughADecorator ? ForwardingValueDispatcher(base: dispatcher) : dispatcher
        let cache = AvatarCache(server: OfflineServer(), dispatcher: injected)
        await #expect(throws: AvatarError.offline) { try await cache.avatar(for: "ada") }
        await #expect(throws: AvatarError.offline) { try await cache.avatar(for: "ada") }  // the same download
        #expect(dispatcher.history.filter { $0.task.label == "fetch ada" }.count == 1)
        try dispatcher.verifyIdle()
    }

    /// Item 6: in production, `value(of:)` is the task's value.
    @Test func inProductionTheCacheAwaitsTheTask() async throws {
        let cache = AvatarCache(server: OfflineServer(), dispatcher: QueueDispatcher())
        await #expect(throws: AvatarError.offline) { try await cache.avatar(for: "ada") }
    }
}
