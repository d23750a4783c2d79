public import TaskDispatch

extension ManualDispatcher {
    /// A task the dispatcher holds and has not run: what assertions and error messages describe.
    ///
    /// ```swift
    /// #expect(dispatcher.pendingTasks.map(\.label) == ["parse", "deliver"])
    /// ```
    ///
    /// Only the dispatcher creates these: they describe its own tasks.
    public struct PendingTask: Sendable, Hashable, CustomStringConvertible {
        /// The dispatch order of the task, starting at 1; unique within one dispatcher.
        public let sequence: UInt64
        /// Where the task runs.
        public let context: TaskContext
        /// The label given at dispatch, if any.
        public let label: String?
        /// Where the task was dispatched.
        public let callSite: CallSite
        /// The priority given at dispatch (meaningful for background tasks).
        public let priority: BackgroundPriority
        /// When the task falls due on the virtual clock (time since the dispatcher was created).
        ///
        /// A task whose delay reaches past the clock's range (about 292 years) never falls due; its due time
        /// reads as `Duration.nanoseconds(Int64.max)`, one nanosecond after the latest time the clock can show.
        public let dueTime: Duration
        /// The interval of the repeating series this task is the next tick of
        /// (`background(every:)`, `foreground(every:)`, `ticks(every:)`); `nil` for a one-off task.
        public let repeatInterval: Duration?

        init(_ task: ScheduledTask, callSites: [CallSite]) {
            self.sequence = task.key.sequence
            self.context = task.context
            self.label = task.label
            self.callSite = callSites[Int(task.callSite)]
            self.priority = task.priority
            self.dueTime = .nanoseconds(task.key.due)
            self.repeatInterval = task.series?.interval
        }

        /// Like `#4 background "parse" at FeedExample/FeedService.swift:31, due 0 s`.
        public var description: String {
            self.describe(when: "due \(formatTime(self.dueTime.nanosecondsSaturated))")
        }

        /// `#4 background "parse" at FeedExample/FeedService.swift:31, <when>`, then the series it is a tick of.
        func describe(when: String) -> String {
            let series = self.repeatInterval.map { " (a tick of a series every \(formatDuration($0)))" } ?? ""
            return "#\(self.sequence) \(self.context) \(quoted(self.label)) at \(self.callSite), \(when)\(series)"
        }
    }
}
