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

    private enum StepOutcome {
        case ran(Schedule.Step, callSites: [CallSite])
        case nothingDue(Failure)
    }

    private func step(_ method: String, _ scope: Schedule.Scope) throws(ManualDispatcherError) -> TaskRun {
        try self.claimRun(method)
        let outcome = self.monitor.withLock { schedule -> StepOutcome in
            guard let step = schedule.next(in: scope, jumpingClockTo: nil) else {
                return .nothingDue(schedule.failure(.noTaskToRun(method: method, scope: scope)))
            }
            return .ran(step, callSites: schedule.callSites.sites)
        }
        switch outcome {
        case .nothingDue(let failure):
            self.endRun()
            throw ManualDispatcherError(failure)
        case .ran(let step, let callSites):
            self.execute(step.work)
            self.endRun()
            return TaskRun(step.run, callSites: callSites)
        }
    }
}
