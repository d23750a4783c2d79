/// The async drains waiting for a due task or their tracked tasks to settle: while only one waits, on the main actor,
/// a tracked task's awaited dispatch there runs the due tasks for it (the assist), within its runaway bound.
struct WaitingSettles: Sendable {
    struct Entry: Sendable {
        /// The drain's method, such as `"runUntilIdle()"`: the run claim's name while a task runs for it.
        let method: String
        /// How many more tasks the drain may run before its runaway bound.
        let budget: Int
        /// Whether the drain runs on the main actor, where the tasks would run for it.
        let onMainActor: Bool
        var ran = 0
    }

    /// The waiting drains by waiter identity, each in while it waits (see `Storage.awaitSettled`).
    var entries: [DispatchWaiters<WaitResumer>.ID: Entry] = [:]
    /// How many tasks ran for waiting drains since the dispatcher was created; for the package's own tests.
    private(set) var totalRan = 0

    var isEmpty: Bool { self.entries.isEmpty }

    /// The one waiting drain that may have a task run for it, if exactly one waits and its bound allows another.
    var assisted: (id: DispatchWaiters<WaitResumer>.ID, method: String)? {
        guard self.entries.count == 1, let (id, entry) = self.entries.first, entry.onMainActor,
            entry.ran < entry.budget
        else { return nil }
        return (id, entry.method)
    }

    mutating func countRun(for id: DispatchWaiters<WaitResumer>.ID) {
        guard let index = self.entries.index(forKey: id) else { return }
        self.entries.values[index].ran += 1
        self.totalRan += 1
    }

    /// Every invariant that does not hold, as a message.
    func invariantViolations() -> [String] {
        self.entries.compactMap { id, entry in
            entry.ran <= entry.budget && entry.budget >= 0
                ? nil : "a waiting drain ran \(entry.ran) tasks for a budget of \(entry.budget)"
        }
    }
}

extension Schedule {
    /// Claims the run for the assist, in manual mode (auto-drain runs the work anyway), where the drain could claim.
    mutating func claimForWaitingSettle(thread: UInt) -> Bool {
        guard !self.autoDrain, self.claim == nil, self.deferredFailures.isEmpty, self.hasDueTask,
            let (id, method) = self.waitingSettles.assisted, self.waiters.holdsOnly(id)
        else { return false }
        self.claim = RunClaim(method: method, thread: thread)
        return true
    }
}
