import TaskDispatch

extension ManualDispatcher {
    /// Runs the oldest due foreground task, on the main actor.
    ///
    /// ```swift
    /// try dispatcher.runNextForeground()   // deliver the parsed items
    /// #expect(model.items.count == 3)
    /// ```
    ///
    /// - Returns: What ran.
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/noTaskToRun(_:)`` when no
    ///   foreground task is due (the message says what else is pending), or
    ///   ``ManualDispatcherError/Kind/reentrantRun`` when called from inside a task.
    /// - Complexity: O(1) amortized.
    @discardableResult
    public func runNextForeground() throws(ManualDispatcherError) -> TaskRun {
        try self.step("runNextForeground()", .foreground)
    }

    /// Runs the next due background task on the calling thread: the oldest one, or as ``order`` chooses.
    ///
    /// - Returns: What ran.
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/noTaskToRun(_:)`` when no
    ///   background task is due, or ``ManualDispatcherError/Kind/reentrantRun`` when called from a task.
    /// - Complexity: O(1) amortized in every order.
    @discardableResult
    public func runNextBackground() throws(ManualDispatcherError) -> TaskRun {
        try self.step("runNextBackground()", .background)
    }

    /// Runs the next due task of either context: the oldest by (due time, dispatch order), or as ``order``
    /// chooses.
    ///
    /// - Returns: What ran.
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/noTaskToRun(_:)`` when no
    ///   task is due, or ``ManualDispatcherError/Kind/reentrantRun`` when called from a task.
    /// - Complexity: O(1) amortized in every order.
    @discardableResult
    public func runNext() throws(ManualDispatcherError) -> TaskRun {
        try self.step("runNext()", .any)
    }

    private func step(_ method: String, _ scope: Schedule.Scope) throws(ManualDispatcherError) -> TaskRun {
        var run = Run(method, .step(scope))
        try self.storage.run(&run)
        return TaskRun(run.last.unsafelyUnwrapped, callSites: run.callSites)  // a step that returns ran one task
    }

    // MARK: - Async steps, which wait for the code under test to dispatch

    /// Runs the next due background task, first waiting for the code under test to dispatch one: the async form of
    /// ``runNextBackground()``.
    ///
    /// A due task runs at once; otherwise the call suspends until a dispatch wakes it (nothing polls). A delayed task
    /// does not fall due while it waits: move the clock with ``advance(by:waitingUpTo:)``. Before choosing and before
    /// returning, it waits for cancelled tracked tasks to end or wait on the dispatcher, so ``verifyIdle()`` right
    /// after sees them done.
    ///
    /// - Parameter limit: Replaces ``waitLimit`` for this call only; leave it out (see <doc:Limits>).
    /// - Returns: What ran.
    /// - Throws: ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/waitTimedOut(after:)`` (none was due
    ///   within the limit), ``ManualDispatcherError/Kind/reentrantRun``, ``ManualDispatcherError/Kind/concurrentRun``
    ///   or ``ManualDispatcherError/Kind/unsettledTasks(after:)``; `CancellationError` when the calling task is
    ///   cancelled while it waits.
    @discardableResult
    nonisolated(nonsending) public func runNextBackground(waitingUpTo limit: Duration? = nil) async throws -> TaskRun {
        try await self.waitingStep(self.method("runNextBackground", limit: limit), .background, limit)
    }

    /// Runs the oldest due foreground task on the main actor, first waiting for the code under test to dispatch
    /// one: the async form of ``runNextForeground()``; see ``runNextBackground(waitingUpTo:)`` for how it waits.
    /// A task that awaited it with `runOnMainActor` resumes afterwards, in a job of its own: await that task, or
    /// use ``runUntilIdle(waitingUpTo:)``, to observe what it does next.
    ///
    /// - Parameter limit: Replaces ``waitLimit`` for this call only; leave it out (see <doc:Limits>).
    /// - Returns: What ran.
    /// - Throws: What ``runNextBackground(waitingUpTo:)`` throws.
    @discardableResult
    nonisolated(nonsending) public func runNextForeground(waitingUpTo limit: Duration? = nil) async throws -> TaskRun {
        try await self.waitingStep(self.method("runNextForeground", limit: limit), .foreground, limit)
    }

    /// Runs the next due task of either context, first waiting for the code under test to dispatch one: the async
    /// form of ``runNext()``; see ``runNextBackground(waitingUpTo:)`` for how it waits.
    ///
    /// - Parameter limit: Replaces ``waitLimit`` for this call only; leave it out (see <doc:Limits>).
    /// - Returns: What ran.
    /// - Throws: What ``runNextBackground(waitingUpTo:)`` throws.
    @discardableResult
    nonisolated(nonsending) public func runNext(waitingUpTo limit: Duration? = nil) async throws -> TaskRun {
        try await self.waitingStep(self.method("runNext", limit: limit), .any, limit)
    }

    /// One step that waits for work: claims the run and takes the due task, or releases it and waits for one.
    nonisolated(nonsending) func waitingStep(_ method: String, _ scope: Schedule.Scope, _ limit: Duration?) async throws
        -> TaskRun
    {
        let limit = limit ?? self.waitLimit
        let deadline = limit.dispatchDeadline
        let id = self.storage.update { $0.waiters.makeID() }
        var run = Run(method, .step(scope, waits: true))
        while true {
            // Before it chooses and before it returns, the cancelled tracked tasks settle: `verifyIdle()` sees them done.
            try await self.storage.wait(until: .cancelledTasksSettled, id: id, deadline: deadline) {
                $0.notSettled(method, limit: limit, $0.tracked.unsettledCancelled)
            }
            if run.ran > 0 { return TaskRun(run.last.unsafelyUnwrapped, callSites: run.callSites) }
            // Paused (`true`) while none is due; woken, it takes the task, unless another run took it first.
            if try await self.storage.run(&run, waiter: id, until: deadline, limit: limit, reporting: .all) {
                try await self.storage.wait(until: .dueTask(scope), id: id, deadline: deadline) {
                    $0.failure(.dueTaskNotDispatched(method: method, scope: scope, limit: limit))
                }
            }
        }
    }
}
