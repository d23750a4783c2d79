import TaskDispatch

// The package's own hooks into a ManualDispatcher, for its tests: invariants, waits begun, tracked tasks' state.
extension ManualDispatcher {
    /// Stops the process, naming the broken invariant, if the schedule or its tracked-task records are inconsistent.
    /// Takes the lock: call it between operations, never from inside a task. O(n log n) in the tasks held.
    package func checkInvariants() {
        self.storage.read { $0.checkInvariants() }
    }

    /// The broken invariants as messages, for the model-based test, which shrinks the sequence that broke one.
    package func invariantViolations() -> [String] {
        self.storage.read { $0.invariantViolations() }
    }

    /// The number of calls suspended in a wait.
    package var waiterCount: Int {
        self.storage.read { $0.waiters.count }
    }

    /// Calls `observer` each time a wait registers and suspends.
    package func observeWaiterRegistrations(_ observer: @escaping @Sendable () -> Void) {
        self.storage.update { $0.waiters.registrationObserver = observer }
    }

    /// The number of tracked tasks that are not settled (it changes as they run on their own executors).
    package var unsettledTaskCount: Int {
        self.storage.read { $0.tracked.unsettledCount }
    }

    /// Calls `observer` each time a tracked task's body parks at its start gate, before it suspends there.
    package func observeStartGateParking(_ observer: @escaping @Sendable () -> Void) {
        self.storage.update { $0.tracked.gateParkingObserver = observer }
    }

    /// Calls `observer`, under the lock (it must not call the dispatcher), as `verifyIdle()` begins to wait for a task
    /// another thread runs.
    package func observeIdleCheckWaits(_ observer: @escaping @Sendable () -> Void) {
        self.storage.update { $0.idleCheckObserver = observer }
    }

    /// How many tasks tracked tasks ran inside their awaited dispatches for a waiting async drain.
    package var tasksRunForWaitingDrains: Int {
        self.storage.read { $0.waitingSettles.totalRan }
    }

    /// How many times auto-advance's hold of the clock outlasted the wait limit (see `ClockHold`).
    package var clockHoldsTimedOut: Int {
        self.storage.read { $0.clockHold.timedOut }
    }

    #if DEBUG
        /// How many times the dispatcher's lock has been taken since its creation, for the tests of each verb's cost.
        package var lockAcquisitions: Int {
            self.storage.monitor.acquisitionCount
        }
    #endif
}
