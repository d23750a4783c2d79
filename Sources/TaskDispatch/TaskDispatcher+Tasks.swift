extension TaskDispatcher {
    /// Starts a plain `Task` that runs `operation`: the default for every dispatcher that does not track tasks.
    ///
    /// The label and the call site are not used, and the task starts at once on the executor its isolation names,
    /// as `Task { }` does. `QueueDispatcher` and `OperationQueueDispatcher` use it, and count the task, until it
    /// ends, as outstanding background work for their `waitForBackgroundTasks(timeout:)`, unless its operation is
    /// isolated to the main actor (foreground work does not count: a wait that blocks the main thread would wait
    /// for it for ever).
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
        if let counting = self as? any CountsBackgroundWork {
            return counting.tracker.startTask(operation)
        }
        return Task(operation: operation)
    }

    /// Starts a Swift task through this dispatcher, with a label and a call site, and returns it.
    ///
    /// Use it where the code would write `Task { }`: in production it is exactly that, and in a test the
    /// dispatcher can hold the start, track the task and report an error that would otherwise vanish. Like
    /// `Task { }`, the closure inherits the caller's actor (the main actor, in a `@MainActor` model):
    ///
    /// ```swift
    /// @MainActor final class FeedModel {
    ///     func refresh() {
    ///         dispatcher.startTask(label: "refresh") {
    ///             self.items = try await self.source.load()
    ///         }
    ///     }
    /// }
    /// ```
    ///
    /// With `ManualDispatcher`, the start is a pending task (foreground for a main-actor operation, background
    /// otherwise) that the test steps or drains; see `ManualDispatcher.startTask(label:callSite:operation:)`.
    ///
    /// - Parameters:
    ///   - label: A short name shown in diagnostics.
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

/// A production dispatcher whose `waitForBackgroundTasks(timeout:)` waits for the tasks started through it too.
protocol CountsBackgroundWork {
    /// The count of the dispatcher's outstanding background work.
    var tracker: BackgroundWorkTracker { get }
}

extension BackgroundWorkTracker {
    /// Starts `operation` as `Task { }` would, counted as outstanding background work until it returns or throws;
    /// one isolated to the main actor is started as it is, uncounted, as foreground tasks are.
    func startTask<Success: Sendable>(
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        if let isolation = operation.isolation, isolation === MainActor.shared { return Task(operation: operation) }
        self.taskAccepted()
        // The task holds the tracker, so the count's own retain (see `taskAccepted()`) is not its last reference.
        return Task {
            defer { self.taskEnded() }
            return try await operation()
        }
    }
}
