import TaskDispatch

// The package's own hooks into a ManualDispatcher, gathered in one place: tests use them to know that a wait has
// begun, to read what changes as tracked tasks run, and to turn on the task executor for tracked tasks.
extension ManualDispatcher {
    /// The number of calls suspended in a wait; for the package's own tests.
    package var waiterCount: Int {
        self.monitor.withLock { $0.waiters.count }
    }

    /// Calls `observer` each time a wait registers and suspends; for the package's own tests.
    package func observeWaiterRegistrations(_ observer: @escaping @Sendable () -> Void) {
        self.monitor.withLock { $0.waiters.registrationObserver = observer }
    }

    /// The number of tracked tasks that are not settled; for the package's own tests (it changes as the tasks run
    /// on their own executors).
    package var unsettledTaskCount: Int {
        self.monitor.withLock { $0.tracked.unsettledCount }
    }

    /// Whether a nonisolated tracked task runs with ``taskExecutor`` as its preference (off by default); for the
    /// package's own tests of the executor.
    package var prefersTaskExecutorForTrackedTasks: Bool {
        get { self.monitor.withLock { $0.tracked.prefersTaskExecutor } }
        set { self.monitor.withLock { $0.tracked.prefersTaskExecutor = newValue } }
    }

    /// Calls `observer` each time a tracked task's body parks at its start gate, before it suspends there; for the
    /// package's own tests.
    package func observeStartGateParking(_ observer: @escaping @Sendable () -> Void) {
        self.monitor.withLock { $0.tracked.gateParkingObserver = observer }
    }

    /// Calls `observer` each time `verifyIdle()` begins to wait for a task another thread is running to end, just
    /// before it blocks; for the package's own tests. The observer runs under the dispatcher's lock: it must not call
    /// the dispatcher.
    package func observeIdleCheckWaits(_ observer: @escaping @Sendable () -> Void) {
        self.monitor.withLock { $0.idleCheckObserver = observer }
    }

    /// How many tasks a tracked task ran inside its awaited dispatch for a waiting async drain; for the package's
    /// own tests.
    package var tasksRunForWaitingDrains: Int {
        self.monitor.withLock { $0.waitingSettles.totalRan }
    }

    /// How many times auto-advance's hold of the clock outlasted the wait limit (see `ClockHold`); for the package's
    /// own tests.
    package var clockHoldsTimedOut: Int {
        self.monitor.withLock { $0.clockHold.timedOut }
    }

    #if DEBUG
        /// How many times the dispatcher's lock has been taken since its creation (debug builds); for the package's
        /// tests of what each verb costs.
        package var lockAcquisitions: Int {
            self.monitor.acquisitionCount
        }
    #endif
}
