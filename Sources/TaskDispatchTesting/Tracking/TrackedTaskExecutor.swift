import Dispatch
import TaskDispatch

/// The task executor a nonisolated tracked task prefers, and with it its child tasks and the default actors they
/// enter: it runs each job at once on the global queue of the job's priority and counts, in the task's record, the
/// jobs enqueued and not yet run, so the task settles only when no part of it runs (not before a sibling reached its
/// first sleep). Code on an actor with an executor of its own (the main actor) does not pass through it.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
final class TrackedTaskExecutor: TaskExecutor {
    /// The tracked task whose jobs it counts.
    private let scope: TrackedTaskScope

    init(scope: TrackedTaskScope) {
        self.scope = scope
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let queue = Self.queue(for: job.priority)
        let job = UnownedJob(job)
        self.scope.storage.update { $0.tracked.jobEnqueued(self.scope.id) }
        queue.async {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
            // The job's code has suspended or finished: the task may have settled, which can end a drain's wait.
            self.scope.storage.changeTrackedTasks { $0.tracked.jobRan(self.scope.id) }
        }
    }

    /// The global queue whose quality of service matches a job's priority.
    private static func queue(for priority: JobPriority) -> DispatchQueue {
        switch priority.rawValue {
        case TaskPriority.high.rawValue...: Self.queues[3]
        case TaskPriority.medium.rawValue...: Self.queues[2]
        case TaskPriority.low.rawValue...: Self.queues[1]
        default: Self.queues[0]
        }
    }

    private static let queues: [DispatchQueue] = [
        DispatchQueue.global(qos: .background), DispatchQueue.global(qos: .utility),
        DispatchQueue.global(qos: .default), DispatchQueue.global(qos: .userInitiated),
    ]
}
