import TaskDispatch

extension ManualDispatcher {
    /// A task the dispatcher ran, as kept in its ``ManualDispatcher/history``.
    ///
    /// Only the dispatcher creates these: they describe its own runs.
    public struct TaskRun: Sendable, Hashable, CustomStringConvertible {
        /// The task as it was pending.
        public let task: PendingTask
        /// The virtual time at which it started.
        public let startTime: Duration

        init(_ record: RunRecord, callSites: [CallSite]) {
            self.task = PendingTask(record.task, callSites: callSites)
            self.startTime = .nanoseconds(record.start)
        }

        /// Like `#4 background "parse" at FeedExample/FeedService.swift:31, ran at 0 s`.
        public var description: String {
            self.task.describe(when: "ran at \(formatTime(self.startTime.nanosecondsSaturated))")
        }
    }
}
