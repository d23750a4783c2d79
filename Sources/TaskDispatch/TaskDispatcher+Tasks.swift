extension TaskDispatcher {
    /// Starts a plain `Task` that runs `operation`: the default for every dispatcher that does not track tasks.
    ///
    /// `QueueDispatcher` and `OperationQueueDispatcher` use it: the label and the call site are not used, and the
    /// task starts at once on the executor its isolation names, as `Task { }` does.
    ///
    /// - Parameters:
    ///   - label: Not used.
    ///   - callSite: Not used.
    ///   - operation: The task's body.
    /// - Returns: The task.
    @discardableResult
    public func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        Task(operation: operation)
    }

    /// Awaits `task.value`: the default for every dispatcher that does not track tasks.
    ///
    /// `QueueDispatcher` and `OperationQueueDispatcher` use it. Inside a task that a test dispatcher tracks (a
    /// decorator that does not forward ``value(of:)``, say), that dispatcher still sees the await.
    ///
    /// - Parameter task: The task to await.
    /// - Returns: The task's value.
    /// - Throws: What the task threw.
    nonisolated(nonsending) public func value<Success: Sendable>(of task: Task<Success, any Error>) async throws
        -> Success
    {
        try await TaskTracking.value(of: task)
    }

    /// Starts a Swift task through this dispatcher, with a label and a call site, and returns it.
    ///
    /// Use it where the code would write `Task { }`: in production it is exactly that (the closure inherits the
    /// caller's actor, and runs even if the task was cancelled before it started), and in a test `ManualDispatcher`
    /// holds the start as a pending task, tracks the task, and reports an error that would otherwise vanish:
    /// `dispatcher.startTask(label: "refresh") { … }`.
    ///
    /// - Parameters:
    ///   - label: A short name shown in diagnostics (messages and the history); it does not set `Task.name`.
    ///   - fileID: The starting file; leave the default.
    ///   - line: The starting line; leave the default.
    ///   - operation: The task's body.
    /// - Returns: The task, to await or cancel.
    @discardableResult
    public func startTask<Success: Sendable>(
        label: String? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        @_inheritActorContext _ operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        self.startTask(label: label, callSite: CallSite(fileID: fileID, line: line), operation: operation)
    }
}
