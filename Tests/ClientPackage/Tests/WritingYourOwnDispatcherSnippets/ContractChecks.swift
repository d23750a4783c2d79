import TaskDispatch
import TaskDispatchTesting
import Testing

@Test func manualDispatchersKeepTheContract() async throws {
    try await DispatcherContract.check { .manual(ManualDispatcher()) }
    try await DispatcherContract.check { .manual(ManualDispatcher(mode: .autoDrain)) }
}

@Test func aDecoratorOverAManualDispatcherKeepsTheContract() async throws {
    try await DispatcherContract.check {
        let manual = ManualDispatcher()
        return .manual(MetricsDispatcher(base: manual, metrics: Metrics()), over: manual)
    }
}

@Test func aTestDoubleOfYourOwnKeepsTheContract() async throws {
    try await DispatcherContract.check {
        let double = MyTestDispatcher()
        return DispatcherContract.Subject(
            double,
            now: { double.now },
            advance: { duration in try double.advance(by: duration) }
        )
    }
}

@Test func theMetricsDispatcherCountsEachDispatchByContext() throws {
    let manual = ManualDispatcher()
    let metrics = Metrics()
    let dispatcher = MetricsDispatcher(base: manual, metrics: metrics)
    dispatcher.background {}
    dispatcher.foreground {}
    dispatcher.background {}
    #expect(metrics.count("dispatch.background") == 2)
    #expect(metrics.count("dispatch.foreground") == 1)
    _ = try manual.runUntilIdle()
}

/// A test double of the reader's own, with its own notion of now; here it is built on a `ManualDispatcher`.
final class MyTestDispatcher: TaskDispatcher, Sendable {
    private let base = ManualDispatcher()

    var clock: ManualDispatcher.Clock { self.base.clock }

    var now: Duration { self.base.now }

    func advance(by duration: Duration) throws {
        try self.base.advance(by: duration)
    }

    func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        self.base.startTask(label: label, callSite: callSite, operation: operation)
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
    }
}
