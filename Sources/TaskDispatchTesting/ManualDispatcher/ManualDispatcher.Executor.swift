import TaskDispatch

@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
extension ManualDispatcher {
    /// A task executor whose jobs are background tasks on the dispatcher; package API, for the package's own tests.
    ///
    /// Every job the runtime enqueues on it (a task's first run, and each resumption after an `await`) becomes a
    /// background task labeled `task executor job`, and running that task runs the job on the thread of the run
    /// method. 0.2 gave it to nonisolated tracked tasks as their executor preference; 1.0 does not, and no longer
    /// makes it public: a default actor entered from a task that prefers it runs its job here too, so a held job holds
    /// the actor, and code outside the task that awaits the actor waits for the test to run the job (issue 17). The
    /// async drains drive tracked tasks from the dispatcher's own records instead, on every platform.
    package final class Executor: TaskExecutor {
        /// The dispatcher that holds the jobs; weak, since the dispatcher keeps this executor.
        private weak let dispatcher: ManualDispatcher?

        init(dispatcher: ManualDispatcher) {
            self.dispatcher = dispatcher
        }

        /// Holds `job` as a background task on the dispatcher, to run when the test runs that task.
        ///
        /// - Parameter job: The job the runtime enqueues.
        package func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            guard let dispatcher = self.dispatcher else {
                writeToStandardError(
                    "ManualDispatcher: a job was enqueued on the task executor of a ManualDispatcher that no longer exists, so its task will never resume. Keep the dispatcher alive until its tasks have finished, or cancel the tasks and drain them before the end of the test\n"
                )
                return
            }
            let work = DispatchedTask.Work.background { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
            dispatcher.dispatch(
                DispatchedTask(
                    unbound: work, label: "task executor job", callSite: CallSite(fileID: #fileID, line: #line)))
        }
    }

    /// The task executor whose jobs are background tasks on this dispatcher; one per dispatcher.
    ///
    /// See ``Executor``.
    package var taskExecutor: Executor {
        self.storage.taskExecutor { Executor(dispatcher: self) }
    }
}
