import TaskDispatch

// The package's own hooks into a ManualDispatcher, gathered in one place: tests use them to check the schedule's
// invariants, to know that a wait has begun, to read what changes as tracked tasks run, and to turn on the task
// executor for tracked tasks.
extension ManualDispatcher {
    /// Stops the process with a message naming the broken invariant if the schedule (or its tracked-task records)
    /// is inconsistent: the hook the package's tests call after every operation.
    ///
    /// Takes the lock, so call it between operations, never from inside a task.
    ///
    /// - Complexity: O(n log n) in the tasks the schedule holds.
    package func checkInvariants() {
        self.storage.read { $0.checkInvariants() }
    }

    /// The schedule's broken invariants, each as a message; empty when it is consistent. The model-based test
    /// reads them instead of stopping, so that it can shrink the sequence that broke one.
    ///
    /// - Complexity: As ``checkInvariants()``.
    package func invariantViolations() -> [String] {
        self.storage.read { $0.invariantViolations() }
    }

    /// The number of calls suspended in a wait; for the package's own tests.
    package var waiterCount: Int {
        self.storage.read { $0.waiters.count }
    }

    /// Calls `observer` each time a wait registers and suspends; for the package's own tests.
    package func observeWaiterRegistrations(_ observer: @escaping @Sendable () -> Void) {
        self.storage.send(.observeWaiterRegistrations(observer))
    }

    /// The number of tracked tasks that are not settled; for the package's own tests (it changes as the tasks run
    /// on their own executors).
    package var unsettledTaskCount: Int {
        self.storage.read { $0.tracked.unsettledCount }
    }

    /// Whether a nonisolated tracked task runs with ``taskExecutor`` as its preference (off by default); for the
    /// package's own tests of the executor.
    package var prefersTaskExecutorForTrackedTasks: Bool {
        get { self.storage.read { $0.tracked.prefersTaskExecutor } }
        set { self.storage.send(.prefersTaskExecutor(newValue)) }
    }

    /// Calls `observer` each time a tracked task's body parks at its start gate, before it suspends there; for the
    /// package's own tests.
    package func observeStartGateParking(_ observer: @escaping @Sendable () -> Void) {
        self.storage.send(.observeStartGateParking(observer))
    }

    /// Calls `observer` each time `verifyIdle()` begins to wait for a task another thread is running to end, just
    /// before it blocks; for the package's own tests. The observer runs under the dispatcher's lock: it must not call
    /// the dispatcher.
    package func observeIdleCheckWaits(_ observer: @escaping @Sendable () -> Void) {
        self.storage.send(.observeIdleCheckWaits(observer))
    }

    /// How many tasks a tracked task ran inside its awaited dispatch for a waiting async drain; for the package's
    /// own tests.
    package var tasksRunForWaitingDrains: Int {
        self.storage.read { $0.waitingSettles.totalRan }
    }

    /// How many times auto-advance's hold of the clock outlasted the wait limit (see `ClockHold`); for the package's
    /// own tests.
    package var clockHoldsTimedOut: Int {
        self.storage.read { $0.clockHold.timedOut }
    }

    #if DEBUG
        /// How many times the dispatcher's lock has been taken since its creation (debug builds); for the package's
        /// tests of what each verb costs.
        package var lockAcquisitions: Int {
            self.storage.monitor.acquisitionCount
        }
    #endif
}
