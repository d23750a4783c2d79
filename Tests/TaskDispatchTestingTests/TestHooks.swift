import TaskDispatch

@testable import TaskDispatchTesting

// The hooks into the engine that only this target's tests use, through `@testable import`: the module itself carries
// only the seams they read (the observers, the counters), and the hooks the other test targets need
// (`ManualDispatcher+TestHooks.swift`).

extension ManualDispatcher {
    /// Stops the process, naming the broken invariant, if the schedule or its tracked-task records are inconsistent.
    /// Takes the lock: call it between operations, never from inside a task. O(n log n) in the tasks held.
    func checkInvariants() {
        self.storage.read { $0.checkInvariants() }
    }

    /// The broken invariants as messages, for the model-based test, which shrinks the sequence that broke one.
    func invariantViolations() -> [String] {
        self.storage.read { $0.invariantViolations() }
    }

    /// Calls `observer` each time a tracked task's body parks at its start gate, before it suspends there.
    func observeStartGateParking(_ observer: @escaping @Sendable () -> Void) {
        self.storage.update { $0.tracked.gateParkingObserver = observer }
    }

    /// Calls `observer`, under the lock (it must not call the dispatcher), as `verifyIdle()` begins to wait for a task
    /// another thread runs.
    func observeIdleCheckWaits(_ observer: @escaping @Sendable () -> Void) {
        self.storage.update { $0.idleCheckObserver = observer }
    }

    /// How many tasks tracked tasks ran inside their awaited dispatches for a waiting async drain.
    var tasksRunForWaitingDrains: Int {
        self.storage.read { $0.waitingSettles.totalRan }
    }

    /// How many times auto-advance's hold of the clock outlasted the wait limit (see `ClockHold`).
    var clockHoldsTimedOut: Int {
        self.storage.read { $0.clockHold.timedOut }
    }

    #if DEBUG
        /// How many times the dispatcher's lock has been taken since its creation, for the tests of each verb's cost.
        var lockAcquisitions: Int {
            self.storage.monitor.acquisitionCount
        }
    #endif
}

extension Schedule {
    /// Stops the process with a message naming the first broken invariant, if any (see ``invariantViolations()``).
    func checkInvariants() {
        let violations = self.invariantViolations()
        // `fatalError`, not `precondition`: an optimized build prints its message too.
        if !violations.isEmpty { fatalError("Schedule invariant broken: \(violations.joined(separator: "; "))") }
    }

    /// The counts the waiters' conditions are checked against, all of them.
    var waitCounts: DispatchWaiters<WaitResumer>.Counts { self.waitCounts(countingCancelled: true) }
}

extension TrackedTasks {
    /// Stops the process with a message naming the broken invariants, if any (see ``invariantViolations()``).
    func checkInvariants() {
        let violations = self.invariantViolations()
        // `fatalError`, not `precondition`: an optimized build prints its message too.
        if !violations.isEmpty { fatalError("TrackedTasks invariant broken: \(violations.joined(separator: "; "))") }
    }

    /// ``unsettledCount``, and how many of those tasks were cancelled.
    var unsettledCounts: (all: Int, cancelled: Int) { (self.unsettledCount, self.unsettledCancelledCount) }
}

extension DispatchWaiters {
    /// The dispatcher now holds `counts`: removes and returns the resumers of the waiters whose condition holds.
    mutating func dispatchHappened(_ counts: Counts, isFinished: (UInt64) -> Bool = { _ in false }) -> [Resumer] {
        self.resumersMet(by: counts, isFinished: isFinished).resumers
    }
}
