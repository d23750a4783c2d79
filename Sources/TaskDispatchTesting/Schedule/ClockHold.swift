/// Auto-advance's rule for when the clock may move: while the test waits, never behind its back.
///
/// In ``ManualDispatcher/Mode/autoAdvance`` the clock jumps when nothing is due and every tracked task has settled.
/// Tracked tasks run on their own executors, concurrently with the test: were a task's sleep allowed to jump the
/// clock as soon as it settled, the clock could move while the test was still between two lines, say before it
/// started a second task, which would then start late and wake at the wrong time (seen in CI: a task meant to wake
/// at 2 s woke at 3 s). kotlinx's `runTest` moves virtual time only while the test body is suspended; this is the
/// same rule, as far as the dispatcher can see the test:
///
/// - **While the test waits in `value(of:)`**, any jump is made: for a tracked task (a registered waiter, which
///   the task's end removes in the critical section that records it, so the clock does not run on while the test
///   resumes), or for a plain task (``untrackedValueWaits``, which ends when the call returns).
/// - **A dispatch from outside the tracked tasks** (the test, or code it calls: a dispatch, its own sleep on the
///   clock, an awaited dispatch) lets the clock reach that task's due time, whenever everything has settled
///   (``testJumpLimit``): a delayed dispatch from the test runs at once, with the delayed work that work
///   dispatches in turn, and the test's own sleep wakes at its time. A dispatch due at once moves nothing. A switch
///   to auto-advance lets it reach every task pending then.
/// - **A tracked task**, settling on its own thread, moves the clock only while the test waits.
///
/// The async drains move the clock themselves, up to their target. The dispatcher tells the test from a tracked
/// task by the tracked-task task-local, so code it does not track (a plain `Task`, a callback) counts as the test's.
///
/// The dispatcher cannot see every await of the test: one of `task.value` on a tracked task, or of code that awaits
/// one itself, would wait for the hold for good. So a hold lasts at most the dispatcher's wait limit: then the
/// clock moves, a note on standard error says why and what to await instead, and from then on jumps no longer wait
/// for the test.
struct ClockHold: Sendable {
    /// The latest time the calls from outside the tracked tasks have let the clock reach: the due time of each task
    /// they dispatched. The clock never moves back, so once it passes this, it allows nothing more.
    private(set) var testJumpLimit = Int64.min
    /// The test's awaits in `value(of:)` of a task the dispatcher did not start, in progress.
    var untrackedValueWaits = 0
    /// Whether a jump is held now: it could be made, but the test neither waits nor asked for it.
    private(set) var isHolding = false
    /// Counts the holds, so that a timer set for an earlier hold does nothing.
    private(set) var generation: UInt64 = 0
    /// Set once a hold outlasted the wait limit: from then on jumps no longer wait for the test.
    private(set) var isReleased = false
    /// How many holds outlasted the wait limit; for the package's own tests.
    private(set) var timedOut = 0
    /// Sets the timer that ends hold `generation` after the wait limit; `nil` in the engine's own tests, which
    /// have no threads.
    var setTimer: (@Sendable (_ generation: UInt64) -> Void)?

    /// A call from outside the tracked tasks dispatched a task due at `time`: the clock may reach it.
    mutating func allowJumps(through time: Int64) {
        if time > self.testJumpLimit { self.testJumpLimit = time }
    }

    /// Lets every jump through from now on, without a note: the dispatcher's wait limit is zero or less, so a hold
    /// would end at once anyway.
    mutating func releaseHolds() {
        self.isReleased = true
    }

    /// Whether a jump to `time` may be made now: the test waits (`testWaits`), a call of the test's let the clock
    /// reach `time`, or holds have been released. Holds it otherwise, unless `drainWaits` (an async drain waits,
    /// and makes the jump itself), setting the timer that ends the hold if it begins now.
    mutating func allowsJump(to time: Int64, testWaits: Bool, drainWaits: Bool) -> Bool {
        if self.allows(time, testWaits: testWaits) {
            self.isHolding = false
            return true
        }
        if !self.isHolding, !drainWaits {
            self.isHolding = true
            self.generation &+= 1
            self.setTimer?(self.generation)
        }
        return false
    }

    /// Whether a jump to `time` goes through: the test waits, a call of the test's let the clock reach `time`, or
    /// holds have been released.
    func allows(_ time: Int64, testWaits: Bool) -> Bool {
        testWaits || time <= self.testJumpLimit || self.isReleased
    }

    /// The clock moved (a drain jumped it, or it advanced), or the test began to wait: nothing is held any more, and
    /// a hold that comes after it sets a timer of its own.
    mutating func endHold() {
        self.isHolding = false
    }

    /// The timer of hold `generation` fired. If that hold still holds (`stillHeld`: a jump could be made, but the
    /// test does not wait), ends it and from then on lets jumps through; otherwise forgets it, so the next hold sets
    /// a timer of its own.
    ///
    /// - Returns: Whether jumps are let through from now on.
    mutating func timerFired(for generation: UInt64, stillHeld: Bool) -> Bool {
        guard self.isHolding, self.generation == generation, !self.isReleased else { return false }
        self.isHolding = false
        guard stillHeld else { return false }
        self.isReleased = true
        self.timedOut += 1
        return true
    }

    /// Every invariant that does not hold, as a message.
    func invariantViolations() -> [String] {
        self.untrackedValueWaits >= 0 ? [] : ["the clock hold counts \(self.untrackedValueWaits) waits of the test"]
    }
}
