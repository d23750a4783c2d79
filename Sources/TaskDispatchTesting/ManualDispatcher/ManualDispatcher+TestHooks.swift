import TaskDispatch

// The package's own hooks into a ManualDispatcher, for the test targets that import the module without `@testable`
// (the stress and trait tests): waits begun, tracked tasks' state. `TaskDispatchTestingTests` keeps its other hooks
// itself (`Tests/TaskDispatchTestingTests/TestHooks.swift`).
extension ManualDispatcher {
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
}
