extension ManualDispatcher {
    /// How the dispatcher chooses the next task among those that are due.
    ///
    /// Foreground tasks always keep their order among themselves: the main queue is serial, so no other
    /// order could happen in production.
    public enum Order: Sendable, Hashable, CustomStringConvertible {
        /// Dispatch order: by due time, then by the order of the dispatch calls. The default.
        case dispatch
        /// Background tasks by `BackgroundPriority`, highest first (dispatch order among equals);
        /// between the foreground and the background, the next foreground task and the background task that
        /// priority puts first run in the order they were dispatched in.
        case priority
        /// A seeded random choice among the due tasks: the oldest foreground task or any due background
        /// task, each equally likely. The same seed replays the same order for the same dispatches and
        /// cancellations; every error message prints it. Tracked tasks that run alongside the drain or each other
        /// make their dispatches in an order the threads decide, so with them a seed replays its choices, not
        /// always the same history (see <doc:ExploringOrders>).
        ///
        /// ```swift
        /// for seed in 0..<100 as Range<UInt64> {
        ///     let dispatcher = ManualDispatcher(order: .random(seed: seed))
        ///     // run the scenario, assert the outcome
        /// }
        /// ```
        ///
        /// A step costs O(1): the due background tasks sit in an array, and a task taken from the middle is
        /// replaced by the last one. Version 0.2 changed the structure, so a seed now replays a different
        /// order than it did in 0.1.
        case random(seed: UInt64)

        /// `dispatch`, `priority`, or `random(seed: 42)`.
        public var description: String {
            switch self {
            case .dispatch: "dispatch"
            case .priority: "priority"
            case .random(let seed): "random(seed: \(seed))"
            }
        }
    }
}
