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
///   clock, an awaited dispatch) lets the clock reach that task while it is pending, whenever everything has
///   settled (``allowances``): a delayed dispatch from the test runs at once, with the delayed work that work
///   dispatches in turn (work a drain runs counts as the test's), and the test's own sleep wakes at its time. A
///   dispatch due at once moves nothing; a cancelled one allows nothing more. A switch to auto-advance lets it
///   reach every task pending then.
/// - **A tracked task**, settling on its own thread, moves the clock only while the test waits.
///
/// The async drains move the clock themselves, up to their target. The dispatcher tells the test from a tracked
/// task by the tracked-task task-local, so code it does not track (a plain `Task`, a callback) counts as the test's.
///
/// The dispatcher cannot see every await of the test: one of `task.value` on a tracked task, of code that awaits one
/// itself, of an XCTest expectation, or a SwiftUI preview that awaits nothing at all, would wait for the hold for
/// good. So a hold lasts at most the dispatcher's wait limit, the one bound on every real-time wait of the
/// dispatcher's (a shorter fixed grace was tried: under load on two cores, the test's own gap between two lines
/// outlasted half a second, and the races came back). Then the clock moves, a note on standard error says why and
/// what to await instead, and from then on jumps no longer wait for the test (the behaviour before this rule). A
/// preview, which awaits nothing, creates its dispatcher with a wait limit of zero, which holds nothing.
struct ClockHold: Sendable {
    /// The delayed tasks dispatched from outside the tracked tasks (and those pending at a switch to auto-advance),
    /// latest first: while one is pending, the clock may reach it. A task that ran or was cancelled is dropped when
    /// it comes to the top, so a timeout the code cancelled allows nothing more.
    private var allowances = AllowanceHeap()
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

    /// A call from outside the tracked tasks dispatched `task`, due after now: the clock may reach it while it is
    /// pending. A task that never falls due allows nothing.
    ///
    /// - Complexity: O(log n) in the allowances.
    mutating func allowJumps(to task: ScheduledTask) {
        guard task.key.due != TaskKey.never else { return }
        self.allowances.insert(task)
    }

    /// The latest due time of the pending allowances; `Int64.min` if none.
    ///
    /// - Complexity: O(1), amortized over the allowances dropped as they reach the top.
    mutating func testJumpLimit() -> Int64 {
        self.allowances.latestPendingDue() ?? .min
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
        if self.allows(time, testWaits: testWaits, jumpLimit: self.testJumpLimit()) {
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

    /// Whether a jump to `time` goes through: the test waits, a call of the test's let the clock reach `time`
    /// (`jumpLimit`, from ``testJumpLimit()``), or holds have been released.
    func allows(_ time: Int64, testWaits: Bool, jumpLimit: Int64) -> Bool {
        testWaits || time <= jumpLimit || self.isReleased
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

/// A max-heap of tasks by due time: the allowances of ``ClockHold``. Only the top is ever read, so a task that ran or
/// was cancelled stays until it reaches the top, where it is dropped; the heap is rebuilt without them when they
/// outnumber the rest, so its memory follows the pending tasks.
struct AllowanceHeap: Sendable {
    private var elements: [(due: Int64, task: ScheduledTask)] = []
    /// The size at which an insertion first drops the tasks that are no longer pending.
    private var compactAt = 64

    mutating func insert(_ task: ScheduledTask) {
        if self.elements.count >= self.compactAt {
            self.elements.removeAll { !$0.task.isPending }
            self.elements.sort { $0.due > $1.due }  // a sorted array is a heap
            self.compactAt = Swift.max(64, 2 * self.elements.count)
        }
        self.elements.append((task.key.due, task))
        var child = self.elements.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard self.elements[parent].due < self.elements[child].due else { break }
            self.elements.swapAt(parent, child)
            child = parent
        }
    }

    /// The due time of the latest task still pending, dropping those above it that are not.
    mutating func latestPendingDue() -> Int64? {
        while let top = self.elements.first {
            if top.task.isPending { return top.due }
            self.removeTop()
        }
        return nil
    }

    private mutating func removeTop() {
        let last = self.elements.removeLast()
        guard !self.elements.isEmpty else { return }
        self.elements[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < self.elements.count else { return }
            let right = left + 1
            let child = right < self.elements.count && self.elements[right].due > self.elements[left].due ? right : left
            guard self.elements[child].due > self.elements[parent].due else { return }
            self.elements.swapAt(parent, child)
            parent = child
        }
    }
}
