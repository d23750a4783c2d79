/// Auto-advance's rule for when the clock may move: while the test waits, never behind its back.
///
/// In ``ManualDispatcher/Mode/autoAdvance`` the clock jumps when nothing is due and every tracked task has settled.
/// Tracked tasks run on their own executors, concurrently with the test: were a task's sleep allowed to jump the
/// clock as soon as it settled, the clock could move while the test was still between two lines, say before it
/// started a second task, which would then start late and wake at the wrong time (seen in CI: a task meant to wake
/// at 2 s woke at 3 s). kotlinx's `runTest` moves virtual time only while the test body is suspended; this is the
/// same rule, as far as the dispatcher can see the test:
///
/// - **While the test waits on the dispatcher**, any jump is made: the test awaits a tracked task in `value(of:)`
///   (a registered waiter), a plain task in `value(of:)` (``untrackedValueWaits``), or work it dispatched and awaits,
///   such as a sleep on the clock (``awaitedByTest``). The wait ends the moment what it waits for is done (the
///   task finished, the work ran), in the critical section that does it, so the clock does not run on past the
///   point where the test resumes.
/// - **Inside the test's own call** (a dispatch, a sleep, switching the mode), the drain that runs on the test's
///   thread jumps no further than the call needs: to the due time of what the call dispatched, and of what that
///   work dispatches in turn (``RunClaim/jumpLimit``). A dispatch of work that is due at once moves nothing.
/// - **A tracked task**, settling on its own thread, moves the clock only while the test waits.
///
/// The async drains move the clock themselves, up to their target.
///
/// The dispatcher cannot see every await of the test: one of `task.value` on a tracked task, or of code that awaits
/// one itself, would wait for the hold for good. So a hold lasts at most the dispatcher's wait limit: then the
/// clock moves, a note on standard error says why and what to await instead, and from then on jumps no longer wait
/// for the test.
struct ClockHold: Sendable {
    /// Pending tasks that code outside the dispatcher's tracked tasks awaits (an awaitable dispatch, a sleep on the
    /// clock): while one is pending, that code waits on the dispatcher. Pruned as they run or are cancelled.
    private(set) var awaitedByTest: [ScheduledTask] = []
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

    /// Code outside the tracked tasks awaits `task`, which is pending.
    mutating func testAwaits(_ task: ScheduledTask) {
        self.awaitedByTest.removeAll { !$0.isPending }
        self.awaitedByTest.append(task)
    }

    /// Whether code outside the tracked tasks awaits a task that is still pending.
    mutating func testAwaitsPendingWork() -> Bool {
        guard !self.awaitedByTest.isEmpty else { return false }
        self.awaitedByTest.removeAll { !$0.isPending }
        return !self.awaitedByTest.isEmpty
    }

    /// Whether a jump to `time` may be made now: the test waits (`testWaits`), the call that asks may jump that far
    /// (`jumpLimit`), or holds have been released. Holds it otherwise, unless `drainWaits` (an async drain waits,
    /// and makes the jump itself), setting the timer that ends the hold if it begins now.
    mutating func allowsJump(to time: Int64, jumpLimit: Int64, testWaits: Bool, drainWaits: Bool) -> Bool {
        if testWaits || time <= jumpLimit || self.isReleased {
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

    /// The clock moved (a drain jumped it, or it advanced): nothing is held any more.
    mutating func clockMoved() {
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
