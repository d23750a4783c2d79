import TaskDispatch

// The package's own hooks into a ManualDispatcher, gathered in one place: tests use them to know that a wait has
// begun, to read what changes as tracked tasks run, and to turn on the task executor for tracked tasks.
extension ManualDispatcher {
    /// The number of calls suspended in a wait; for the package's own tests.
    package var waiterCount: Int {
        self.storage.waiterCount
    }

    /// Calls `observer` each time a wait registers and suspends; for the package's own tests.
    package func observeWaiterRegistrations(_ observer: @escaping @Sendable () -> Void) {
        self.storage.send(.observeWaiterRegistrations(observer))
    }

    /// The number of tracked tasks that are not settled; for the package's own tests (it changes as the tasks run
    /// on their own executors).
    package var unsettledTaskCount: Int {
        self.storage.unsettledTaskCount
    }

    /// Whether a nonisolated tracked task runs with ``taskExecutor`` as its preference (off by default); for the
    /// package's own tests of the executor.
    package var prefersTaskExecutorForTrackedTasks: Bool {
        get { self.storage.prefersTaskExecutor }
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
        self.storage.tasksRunForWaitingDrains
    }

    /// How many times auto-advance's hold of the clock outlasted the wait limit (see `ClockHold`); for the package's
    /// own tests.
    package var clockHoldsTimedOut: Int {
        self.storage.clockHoldsTimedOut
    }

    #if DEBUG
        /// How many times the dispatcher's lock has been taken since its creation (debug builds); for the package's
        /// tests of what each verb costs.
        package var lockAcquisitions: Int {
            self.storage.monitor.acquisitionCount
        }
    #endif
}
