import Dispatch
import TaskDispatch

/// The scope is the task executor a nonisolated tracked task prefers, and with it its child tasks and the default
/// actors they enter: it runs each job at once on the global queue of the job's priority and counts, in the task's
/// record, the jobs enqueued and not yet run, so the task settles only when no part of it runs (not before a sibling
/// reached its first sleep). Code on an actor with an executor of its own (the main actor) does not pass through it.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
extension TrackedTaskScope: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let queue = Self.queue(for: job.priority)
        let job = UnownedJob(job)
        self.storage.update { $0.tracked.jobEnqueued(self.id) }
        queue.async {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
            // The job's code has suspended or finished: the task may have settled, which can end a drain's wait.
            self.storage.changeTrackedTasks { $0.tracked.jobRan(self.id) }
        }
    }

    /// The global queue whose quality of service matches a job's priority.
    private static func queue(for priority: JobPriority) -> DispatchQueue {
        switch priority.rawValue {
        case TaskPriority.high.rawValue...: TrackedTaskScope.queues[3]
        case TaskPriority.medium.rawValue...: TrackedTaskScope.queues[2]
        case TaskPriority.low.rawValue...: TrackedTaskScope.queues[1]
        default: TrackedTaskScope.queues[0]
        }
    }
}

extension TrackedTaskScope {
    /// The global queues a tracked task's jobs run on, by quality of service.
    fileprivate static let queues: [DispatchQueue] = [
        DispatchQueue.global(qos: .background), DispatchQueue.global(qos: .utility),
        DispatchQueue.global(qos: .default), DispatchQueue.global(qos: .userInitiated),
    ]
}
