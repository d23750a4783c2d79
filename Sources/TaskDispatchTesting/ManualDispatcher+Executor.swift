import TaskDispatch

@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
extension ManualDispatcher {
    /// A task executor whose jobs are background tasks on the dispatcher: the test steps or drains them like any
    /// other, so the async code that runs on it advances only when the test says so.
    ///
    /// Give it to a task as its executor preference (SE-0417). Every job the runtime enqueues on it (the
    /// task's first run, and each resumption after an `await`) becomes a background task labeled
    /// `task executor job`, and running that task runs the job, synchronously, on the thread of the run method:
    ///
    /// ```swift
    /// @Test func threeAwaitsAreThreeSteps() async throws {
    ///     let dispatcher = ManualDispatcher()
    ///     let task = Task(executorPreference: dispatcher.taskExecutor) {
    ///         let a = try await dispatcher.runInBackground(label: "a") { 1 }
    ///         let b = try await dispatcher.runInBackground(label: "b") { a + 1 }
    ///         return try await dispatcher.runInBackground(label: "c") { b + 1 }
    ///     }
    ///     try dispatcher.runUntilIdle()        // each job dispatches the next step: one drain runs them all
    ///     #expect(try await task.value == 3)
    /// }
    /// ```
    ///
    /// Tasks started with ``ManualDispatcher/startTask(label:callSite:operation:)`` whose operation is not
    /// isolated to an actor run with this executor as their preference. Code isolated to an actor (the main
    /// actor, or any other) runs on that actor, not here; `Task.sleep` and `Task.yield` ignore the preference
    /// (swiftlang/swift#74395); sleep on the dispatcher's ``ManualDispatcher/clock`` instead.
    ///
    /// A job runs with `runSynchronously(on: asUnownedTaskExecutor())`, never through a serial-executor
    /// overload, so the runtime sees the job's task executor. A job still pending when the dispatcher is
    /// deinitialized is listed in the release report (standard error and the ``ManualDispatcherRegistry``), like
    /// every pending task; a job enqueued after the dispatcher is gone is written to standard error. Its task
    /// never resumes in either case.
    public final class Executor: TaskExecutor {
        /// The dispatcher that holds the jobs; weak, since the dispatcher keeps this executor.
        private weak let dispatcher: ManualDispatcher?

        init(dispatcher: ManualDispatcher) {
            self.dispatcher = dispatcher
        }

        /// Holds `job` as a background task on the dispatcher, to run when the test runs that task.
        ///
        /// - Parameter job: The job the runtime enqueues.
        public func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            guard let dispatcher = self.dispatcher else {
                writeToStandardError(
                    "ManualDispatcher: a job was enqueued on the task executor of a ManualDispatcher that no longer exists, so its task will never resume. Keep the dispatcher alive until its tasks have finished, or cancel the tasks and drain them before the end of the test\n"
                )
                return
            }
            dispatcher.dispatch(
                DispatchedTask(
                    .background { job.runSynchronously(on: self.asUnownedTaskExecutor()) },
                    label: "task executor job",
                    callSite: CallSite(fileID: #fileID, line: #line)
                )
            )
        }
    }

    /// The task executor whose jobs are background tasks on this dispatcher; one per dispatcher.
    ///
    /// See ``Executor``.
    public var taskExecutor: Executor {
        self.executorStorage.withLock { storage in
            if let executor = storage as? Executor { return executor }
            let executor = Executor(dispatcher: self)
            storage = executor
            return executor
        }
    }
}
