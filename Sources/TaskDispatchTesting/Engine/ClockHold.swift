/// Auto-advance's rule for when the clock may move: while the test waits, never behind its back (kotlinx's
/// `runTest` rule, as far as the dispatcher can see the test).
///
/// - **While the test waits in `value(of:)`**, any jump is made (a tracked task's waiter, or ``untrackedValueWaits``).
/// - **A dispatch from outside the tracked tasks** lets the clock move, once everything has settled, as far as that
///   task while it is pending (``allowances``); a switch to auto-advance lets it reach every task pending then.
/// - **A tracked task**, settling on its own thread, moves the clock only while the test waits; so does the work it
///   dispatches, and the work that work dispatches as it runs (``trackedWork``).
///
/// An await the dispatcher cannot see would wait for good, so a hold lasts at most the wait limit; then the clock
/// moves, with a note on standard error. Why: `Docs/Design.md`, "Modes".
struct ClockHold: Sendable {
    /// The delayed tasks dispatched from outside the tracked tasks (and those pending at a switch to auto-advance):
    /// while one is pending, the clock may move, since the next jump reaches no further than it.
    private var allowances: [ScheduledTask] = []
    /// The count of ``allowances`` at which an append first drops the tasks no longer pending.
    private var compactAt = 64
    /// The sequence numbers of the pending tasks that tracked tasks dispatched, or that such tasks dispatched as they
    /// ran: what they dispatch in turn lets the clock move no more than the tracked task's own dispatch would.
    var trackedWork: Set<UInt64> = []
    /// The test's awaits in `value(of:)` of a task the dispatcher did not start, in progress.
    var untrackedValueWaits = 0
    /// Whether a jump is held now: it could be made, but the test neither waits nor asked for it.
    private(set) var isHolding = false
    /// Counts the holds, so that a timer set for an earlier hold does nothing.
    private(set) var generation: UInt64 = 0
    /// Set once a hold outlasted the wait limit (or it is zero): jumps no longer wait for the test.
    var isReleased = false
    /// How many holds outlasted the wait limit; for the package's own tests.
    private(set) var timedOut = 0
    /// Sets the timer that ends hold `generation` after the wait limit; `nil` in the engine's unthreaded tests.
    var setTimer: (@Sendable (_ generation: UInt64) -> Void)?

    /// The test dispatched `task`, due after now: the clock may move while it is pending. O(1) amortized.
    mutating func allowJumps(to task: ScheduledTask) {
        guard task.key.due != TaskKey.never else { return }
        if self.allowances.count >= self.compactAt {
            self.allowances.removeAll { !$0.isPending }
            self.compactAt = Swift.max(64, 2 * self.allowances.count)
        }
        self.allowances.append(task)
    }

    /// Whether a task a call of the test's let the clock reach is still pending; drops those at the end that are not.
    mutating func hasPendingAllowance() -> Bool {
        while let last = self.allowances.last, !last.isPending { self.allowances.removeLast() }
        return !self.allowances.isEmpty
    }

    /// Whether auto-advance's jump may be made now (``allows(testWaits:)``); else a hold begins, with its timer,
    /// unless `drainWaits` (an async drain makes the jump itself).
    mutating func allowsJump(testWaits: Bool, drainWaits: Bool) -> Bool {
        let allows = self.allows(testWaits: testWaits)
        if allows {
            self.isHolding = false
        } else if !self.isHolding, !drainWaits {
            self.isHolding = true
            self.generation &+= 1
            self.setTimer?(self.generation)
        }
        return allows
    }

    /// Whether a jump goes through: the test waits, a call of the test's let the clock reach a task still
    /// pending, or holds have been released.
    mutating func allows(testWaits: Bool) -> Bool { testWaits || self.isReleased || self.hasPendingAllowance() }

    /// The clock moved, or the test began to wait: nothing is held, and the next hold sets a timer of its own.
    mutating func endHold() { self.isHolding = false }

    /// The timer of hold `generation` fired: if it is `stillHeld`, jumps go through from now on (`true`).
    mutating func timerFired(for generation: UInt64, stillHeld: Bool) -> Bool {
        guard self.isHolding, self.generation == generation, !self.isReleased else { return false }
        self.isHolding = false
        guard stillHeld else { return false }
        self.isReleased = true
        self.timedOut += 1
        return true
    }

    /// Every invariant that does not hold, as a message.
    func invariantViolations(pendingCount: Int) -> [String] {
        (self.untrackedValueWaits >= 0 ? [] : ["the clock hold counts \(self.untrackedValueWaits) waits of the test"])
            + (self.trackedWork.count <= pendingCount
                ? [] : ["\(self.trackedWork.count) tasks of tracked work, but \(pendingCount) pending"])
    }
}
