public import TaskDispatch

extension ManualDispatcher {
    /// A task the dispatcher holds and has not run: what assertions and error messages describe.
    ///
    /// ```swift
    /// #expect(dispatcher.pendingTasks.map(\.label) == ["parse", "deliver"])
    /// ```
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
        public let dueTime: Duration

        /// Creates a description of a pending task.
        ///
        /// - Parameters:
        ///   - sequence: The dispatch order, from 1.
        ///   - context: Where the task runs.
        ///   - label: The task's label.
        ///   - callSite: Where it was dispatched.
        ///   - priority: Its priority.
        ///   - dueTime: When it falls due.
        public init(
            sequence: UInt64,
            context: TaskContext,
            label: String?,
            callSite: CallSite,
            priority: BackgroundPriority,
            dueTime: Duration
        ) {
            self.sequence = sequence
            self.context = context
            self.label = label
            self.callSite = callSite
            self.priority = priority
            self.dueTime = dueTime
        }

        /// Like `#4 background "parse" at FeedExample/FeedService.swift:31, due 0 s`.
        public var description: String {
            let name = self.label.map { "\"\($0)\"" } ?? "(no label)"
            return
                "#\(self.sequence) \(self.context) \(name) at \(self.callSite), due \(_formatTime(self.dueTime._nanoseconds))"
        }
    }

    /// A task the dispatcher ran, as kept in its ``ManualDispatcher/history``.
    public struct TaskRun: Sendable, Hashable, CustomStringConvertible {
        /// The task as it was pending.
        public let task: PendingTask
        /// The virtual time at which it started.
        public let startTime: Duration

        /// Creates a record of a run.
        ///
        /// - Parameters:
        ///   - task: The task that ran.
        ///   - startTime: The virtual time at which it started.
        public init(task: PendingTask, startTime: Duration) {
            self.task = task
            self.startTime = startTime
        }

        /// The task's dispatch order, starting at 1.
        public var sequence: UInt64 { self.task.sequence }
        /// Where the task ran.
        public var context: TaskContext { self.task.context }
        /// The task's label, if any.
        public var label: String? { self.task.label }
        /// Where the task was dispatched.
        public var callSite: CallSite { self.task.callSite }

        /// Like `#4 background "parse" at FeedExample/FeedService.swift:31, ran at 0 s`.
        public var description: String {
            let name = self.task.label.map { "\"\($0)\"" } ?? "(no label)"
            return "#\(self.task.sequence) \(self.task.context) \(name) at \(self.task.callSite), "
                + "ran at \(_formatTime(self.startTime._nanoseconds))"
        }
    }

    /// How the dispatcher chooses the next task among those that are due.
    ///
    /// Foreground tasks always keep their order among themselves: the main queue is serial, so no other
    /// order could happen in production.
    public enum Order: Sendable, Hashable, CustomStringConvertible {
        /// Dispatch order: by due time, then by the order of the dispatch calls. The default.
        case dispatch
        /// Background tasks by `BackgroundPriority`, highest first (dispatch order among equals);
        /// the choice between the foreground and the background stays in dispatch order.
        case priority
        /// A seeded random choice among the due tasks: the oldest foreground task or any due background
        /// task. The same seed replays the same order; every error message prints it.
        ///
        /// ```swift
        /// for seed in 0..<100 as Range<UInt64> {
        ///     let dispatcher = ManualDispatcher(order: .random(seed: seed))
        ///     // run the scenario, assert the outcome
        /// }
        /// ```
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

/// A misuse of ``ManualDispatcher`` or a test scenario that went wrong, with everything needed to see why.
///
/// Thrown by the run methods and ``ManualDispatcher/verifyIdle()``. A thrown error fails the test in both
/// Swift Testing and XCTest; its ``description`` says what happened, lists the pending tasks with their
/// call sites, shows the tail of the run history, and prints the random seed when one is in use.
///
/// ```swift
/// #expect(throws: ManualDispatcherError.self) { try dispatcher.runNextBackground() }
/// ```
public struct ManualDispatcherError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// A step found no due task in the context it was asked to run (`nil`: in either context).
        case noTaskToRun(TaskContext?)
        /// A run method reached its `maxTasks` bound while tasks kept falling due.
        case runawayTasks(maxTasks: Int)
        /// ``ManualDispatcher/verifyIdle()`` found pending tasks.
        case pendingTasks
        /// The clock was asked to move backwards.
        case clockMovedBackwards(from: Duration, to: Duration)
        /// A run method was called from inside a task the dispatcher was running.
        case reentrantRun
        /// A run method was called on the main actor while another thread was running tasks.
        case concurrentRun
        /// `run(untilTaskLabeled:)` or `run(until:)` ran out of tasks before its condition held.
        case conditionNotMet
        /// An async step or wait, such as ``ManualDispatcher/runNextBackground(waitingUpTo:)``, reached its
        /// real-time limit before the work it waited for was dispatched.
        case waitTimedOut(after: Duration)
    }

    /// What went wrong.
    public let kind: Kind
    /// The first line of the description: what happened and what to do.
    public let summary: String
    /// The tasks pending when the error was thrown.
    public let pendingTasks: [ManualDispatcher.PendingTask]
    /// The most recent runs, oldest first (bounded by the dispatcher's history limit).
    public let recentRuns: [ManualDispatcher.TaskRun]
    /// The seed of the random order in force, if any.
    public let seed: UInt64?

    /// Creates an error; the dispatcher fills in the pending tasks, history and seed.
    ///
    /// - Parameters:
    ///   - kind: What went wrong.
    ///   - summary: What happened and what to do, in one paragraph.
    ///   - pendingTasks: The tasks still pending.
    ///   - recentRuns: The most recent runs, oldest first.
    ///   - seed: The random seed in force, if any.
    public init(
        kind: Kind,
        summary: String,
        pendingTasks: [ManualDispatcher.PendingTask],
        recentRuns: [ManualDispatcher.TaskRun],
        seed: UInt64?
    ) {
        self.kind = kind
        self.summary = summary
        self.pendingTasks = pendingTasks
        self.recentRuns = recentRuns
        self.seed = seed
    }

    /// The summary, then the pending tasks, the last runs (at most 10 shown) and the seed.
    public var description: String {
        var text = "ManualDispatcher: " + self.summary
        if let seed = self.seed {
            text += "\nRandom order seed: \(seed) (replay with ManualDispatcher(order: .random(seed: \(seed))))"
        }
        if !self.pendingTasks.isEmpty {
            text += "\nPending tasks (\(self.pendingTasks.count)):"
            for task in self.pendingTasks.prefix(20) { text += "\n  \(task)" }
            if self.pendingTasks.count > 20 { text += "\n  … and \(self.pendingTasks.count - 20) more" }
        }
        if !self.recentRuns.isEmpty {
            let shown = self.recentRuns.suffix(10)
            text += "\nLast \(shown.count) runs, oldest first:"
            for run in shown { text += "\n  \(run)" }
        }
        return text
    }
}
