/// Auto-advance's rule for who may move the clock: the test, not a tracked task behind its back.
///
/// In ``ManualDispatcher/Mode/autoAdvance`` the clock jumps when nothing is due and every tracked task has settled.
/// A tracked task runs on its own executor, concurrently with the test: were its sleep allowed to jump the clock as
/// soon as it settles, the clock could move while the test is still between two lines, say before it starts a
/// second task, which would then start late and wake at the wrong time (seen in CI: a task meant to wake at 2 s
/// woke at 3 s). So, as kotlinx's `runTest` moves virtual time only while the test body is suspended, a jump is made
/// only on a call from outside the dispatcher's tracked tasks (the test, or code it calls: a dispatch, a sleep, a run
/// method) or while the test awaits the dispatcher in ``ManualDispatcher/value(of:)-(Task<Success,Error>)``. A jump
/// that a tracked task alone could make is held until then.
///
/// The dispatcher cannot see every await of the test: one of `task.value` on a tracked task, or of code that awaits
/// one itself, would wait for the hold for good. So a hold lasts at most the dispatcher's wait limit: then the
/// clock moves, a note on standard error says why and what to await instead, and jumps no longer wait for the test,
/// as before this rule.
struct ClockHold: Sendable {
    /// The test's awaits on the dispatcher in progress (`value(of:)` called from outside the tracked tasks): while
    /// one is, a tracked task's settling may move the clock.
    var testWaits = 0
    /// Whether a jump is held now: it could be made, but only a tracked task asked.
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

    /// Whether a jump asked for by the test (`byTest`), or by a tracked task, may be made now; holds it otherwise,
    /// setting the timer that ends the hold if it begins now.
    mutating func allowsJump(byTest: Bool) -> Bool {
        if byTest || self.testWaits > 0 || self.isReleased {
            self.isHolding = false
            return true
        }
        if !self.isHolding {
            self.isHolding = true
            self.generation &+= 1
            self.setTimer?(self.generation)
        }
        return false
    }

    /// The clock moved (a drain of the test's jumped it, or it advanced): nothing is held any more.
    mutating func clockMoved() {
        self.isHolding = false
    }

    /// The timer of hold `generation` fired. If that hold still holds (`stillHeld`: a jump could be made, but for
    /// the test), ends it and from then on lets jumps through; otherwise forgets it, so the next hold sets a timer.
    ///
    /// - Returns: Whether jumps are let through from now on.
    mutating func timerFired(for generation: UInt64, stillHeld: Bool) -> Bool {
        guard self.isHolding, self.generation == generation, !self.isReleased else { return false }
        self.isHolding = false
        guard stillHeld, self.testWaits == 0 else { return false }
        self.isReleased = true
        self.timedOut += 1
        return true
    }

    /// Every invariant that does not hold, as a message.
    func invariantViolations() -> [String] {
        self.testWaits >= 0 ? [] : ["the clock hold counts \(self.testWaits) waits of the test"]
    }
}
