extension ManualDispatcher {
    /// Who runs the tasks: the test, step by step, or the dispatcher itself, as soon as they are dispatched.
    ///
    /// Choose it when creating the dispatcher, or change it at any point of a test through ``mode``:
    ///
    /// ```swift
    /// let dispatcher = ManualDispatcher(mode: .autoAdvance)   // an end-state test: no steps, no clock moves
    /// let task = model.refresh()                              // fails, retries after 1 s, 2 s, then 4 s
    /// try await dispatcher.value(of: task)
    /// #expect(model.state == .failed)
    /// #expect(dispatcher.clock.now.offset == .seconds(7))
    /// ```
    public enum Mode: Sendable, Hashable, CustomStringConvertible {
        /// The test runs every task with a step or a drain. The default, for tests that check the state between
        /// steps.
        case manual

        /// Each dispatch runs the task at once, on the dispatching thread, for tests where order does not matter.
        ///
        /// Tasks the running task dispatches run after it, never nested, in the dispatcher's
        /// ``ManualDispatcher/order``; a foreground task runs on the main actor (through `DispatchQueue.main.sync` from
        /// another thread); a dispatch while another run is in progress only enqueues, for that run. Delayed tasks wait
        /// for the clock (or choose ``autoAdvance``). The handle of a task that already ran cancels nothing. A runaway
        /// past ``ManualDispatcher/runawayLimit`` is written to standard error and thrown by the next run method or
        /// ``ManualDispatcher/verifyIdle()``. See <doc:ManualDispatcherReference>.
        case autoDrain

        /// As ``autoDrain``, and when nothing is due and every tracked task has settled, the clock jumps to the next
        /// delayed task or sleep: a test that checks only the end state neither steps nor moves the clock.
        ///
        /// Delays are skipped in order, so the clock still reads what the code waited in all (back-off of 1, 2 and 4
        /// seconds reads 7 s). The clock moves only between settled states, and only while the test waits on the
        /// dispatcher or dispatches from outside the tracked tasks (a delayed task then runs inside its dispatch; see
        /// the article for timers armed in a row): a tracked task, or work it dispatched, never moves it behind the
        /// test's back. An await the dispatcher cannot see (`await task.value` on a tracked task) holds the clock one
        /// ``ManualDispatcher/waitLimit``; then it moves, and a note on standard error says why. Check the end state
        /// after ``ManualDispatcher/value(of:)-(Task<Success,Error>)`` or
        /// ``ManualDispatcher/runUntilIdle(waitingUpTo:)``; for the states in between, use ``manual``. See
        /// <doc:TestingAsyncCode>.
        case autoAdvance

        /// `manual`, `autoDrain` or `autoAdvance`.
        public var description: String {
            switch self {
            case .manual: "manual"
            case .autoDrain: "autoDrain"
            case .autoAdvance: "autoAdvance"
            }
        }
    }
}
