import TaskDispatch

@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
extension ManualDispatcher {
    /// A task executor whose jobs are background tasks on the dispatcher, for the package's own tests.
    ///
    /// Every job the runtime enqueues on it (a task's first run, and each resumption after an `await`) becomes a
    /// background task labeled `task executor job`, run on the thread of the run method. Tracked tasks do not prefer
    /// it (a held job would hold a default actor the task enters; see `Docs/Design.md`).
    package final class Executor: TaskExecutor {
        /// The dispatcher that holds the jobs; weak, since the dispatcher keeps this executor.
        private weak let dispatcher: ManualDispatcher?

        init(dispatcher: ManualDispatcher) {
            self.dispatcher = dispatcher
        }

        /// Holds `job` as a background task on the dispatcher, to run when the test runs that task.
        package func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            guard let dispatcher = self.dispatcher else {
                return writeToStandardError(
                    "ManualDispatcher: a job was enqueued on the task executor of a ManualDispatcher that no longer exists, so its task will never resume. Keep the dispatcher alive until its tasks have finished, or cancel the tasks and drain them before the end of the test\n"
                )
            }
            let work = DispatchedTask.Work.background { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
            dispatcher.dispatch(
                DispatchedTask(
                    unbound: work, label: "task executor job", callSite: CallSite(fileID: #fileID, line: #line)))
        }
    }

    /// The task executor whose jobs are background tasks on this dispatcher; one per dispatcher (see ``Executor``).
    package var taskExecutor: Executor {
        self.storage.update { schedule in
            let executor = schedule.taskExecutor as? Executor ?? Executor(dispatcher: self)
            schedule.taskExecutor = executor
            return executor
        }
    }
}
