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
        /// A seeded random choice among the due tasks: the oldest foreground task or any due background task, each
        /// equally likely, at O(1) a step. The same seed replays the same choices for the same dispatches and
        /// cancellations, and every error message prints it; tracked tasks running on other threads can still vary the
        /// history (see <doc:ExploringOrders>).
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
