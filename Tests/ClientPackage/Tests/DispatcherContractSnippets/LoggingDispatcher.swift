import TaskDispatch

/// Logs every dispatch, then hands the task to `base`.
struct LoggingDispatcher<Base: TaskDispatcher>: TaskDispatcher {
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
        print("\(task.context) task \(task.label ?? "-") from \(task.callSite), delay \(task.delay)")
        return base.dispatch(task)
    }
}

let dispatcher = LoggingDispatcher(base: QueueDispatcher())
