import TaskDispatch

/// Counts dispatches by context, then hands the task to `base`.
struct MetricsDispatcher<Base: TaskDispatcher>: TaskDispatcher {
    let base: Base
    let metrics: Metrics

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
        metrics.increment("dispatch.\(task.context)")
        return base.dispatch(task)
    }
}
