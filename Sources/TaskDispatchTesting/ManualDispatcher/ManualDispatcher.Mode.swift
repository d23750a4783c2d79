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
        /// - A dispatch runs the task before returning. Tasks that the running task dispatches run after it, in
        ///   order, never nested inside it.
        /// - A foreground task runs on the main actor: inline when the dispatching code is on the main actor,
        ///   otherwise through `DispatchQueue.main.sync`, so the dispatching thread waits until it has run.
        /// - A dispatch made while another thread (or a run method) is running tasks only enqueues; that run picks
        ///   the task up before it ends.
        /// - Delayed tasks and sleeps on ``ManualDispatcher/clock`` wait for the clock: move it with
        ///   ``ManualDispatcher/advance(by:)``, or choose ``autoAdvance``.
        /// - Switching to it runs the tasks already due.
        /// - A dispatch that runs its task at once returns the handle of a task that has already run, so cancelling
        ///   it returns `false`.
        /// - More than ``ManualDispatcher/runawayLimit`` tasks in one go stop the drain: the runaway is written to
        ///   standard error, and the next run method or ``ManualDispatcher/verifyIdle()`` throws
        ///   ``ManualDispatcherError/Kind/runawayTasks(limit:)``.
        case autoDrain

        /// As ``autoDrain``, and when nothing is due and every tracked task has settled, the clock jumps to the next
        /// delayed task or sleep: a test that checks only the end state neither steps nor moves the clock.
        ///
        /// Delays are skipped the way kotlinx's `runTest` skips them, in order and on virtual time, so the clock
        /// still reads what the code under test waited in all (1 s + 2 s + 4 s of back-off reads 7 s). The clock
        /// moves only between settled states (see <doc:TestingAsyncCode>), so a task woken by a sleep runs up to its
        /// next wait before the clock moves again. A timer that never stops is stopped after
        /// ``ManualDispatcher/runawayLimit`` jumps made without a call from the test, with the runaway error.
        ///
        /// The clock moves while the test waits on the dispatcher (``ManualDispatcher/value(of:)-(Task<Success,Error>)``,
        /// an async drain), and a dispatch from outside the tracked tasks (the test's, or its own sleep on
        /// ``ManualDispatcher/clock``) lets it reach that task: a delayed dispatch runs at once, with what it
        /// dispatches, and a dispatch due at once moves nothing. A tracked task never moves it behind the test's
        /// back: a task the test starts on the next line is not started late because an earlier one's sleep moved
        /// the clock meanwhile. An await the dispatcher cannot see, such as `await task.value` on a tracked task,
        /// makes the clock wait one ``ManualDispatcher/waitLimit`` for the test; it then moves, a note on standard
        /// error says why, and from then on it moves without waiting. With a wait limit of zero or less (a
        /// preview, which awaits nothing) nothing is held.
        ///
        /// Check the end state after ``ManualDispatcher/value(of:)-(Task<Success,Error>)`` or
        /// ``ManualDispatcher/runUntilIdle(waitingUpTo:)``. ``ManualDispatcher/settle(waitingUpTo:)`` and
        /// ``ManualDispatcher/advance(by:waitingUpTo:)`` return at their own target, where the clock stays until the
        /// test waits again; but work the test does not wait for (a dispatch from a plain `Task`, say) can still
        /// move it. To check states in between, step by step, use ``manual``.
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
