extension ManualDispatcher {
    /// Stops the process with a message naming the broken invariant if the schedule (or its tracked-task records)
    /// is inconsistent: the hook the package's tests call after every operation.
    ///
    /// Takes the lock, so call it between operations, never from inside a task.
    ///
    /// - Complexity: O(n log n) in the tasks the schedule holds.
    package func checkInvariants() {
        self.storage.checkInvariants()
    }

    /// The schedule's broken invariants, each as a message; empty when it is consistent. The model-based test
    /// reads them instead of stopping, so that it can shrink the sequence that broke one.
    ///
    /// - Complexity: As ``checkInvariants()``.
    package func invariantViolations() -> [String] {
        self.storage.invariantViolations()
    }
}
