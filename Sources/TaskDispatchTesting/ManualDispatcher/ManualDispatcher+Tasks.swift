import TaskDispatch

extension ManualDispatcher {
    /// Starts a tracked Swift task: its start waits as a pending task until the test runs it, and an error it
    /// throws that nobody awaited is reported.
    ///
    /// The start is a pending task labeled `label` at the call site: foreground when the operation is isolated to the
    /// main actor, background otherwise. Once it has run, the operation runs where `Task { }` would, concurrently with
    /// the test, and the async drains know from the dispatcher's records when it waits on the dispatcher again. A task
    /// cancelled before its start runs throws `CancellationError` without running the operation. An error the operation
    /// throws is reported once, by ``verifyIdle()`` or a later step, unless the test claims it with
    /// ``value(of:)-(Task<Success,Error>)``. See <doc:ManualDispatcherReference#Async-code>.
    ///
    /// - Parameters:
    ///   - label: A short name, for the start task and the diagnostics.
    ///   - callSite: Where the task was started.
    ///   - operation: The task's body.
    /// - Returns: The task.
    @discardableResult
    public func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        // The task's record and its start, in the one critical section of the start's dispatch.
        let (scope, immediate) = self.storage.startTrackedTask(
            label: label, callSite: callSite, isolation: operation.isolation)
        // Bound around the task's creation, which copies it in: inside the body, the async `withValue` would hop.
        let task = TaskTracking.$scope.withValue(scope) {
            self.makeTrackedTask(scope, operation, immediate: immediate)
        }
        // The task is known by its key from here; a body held on this thread (now off it) may go on.
        self.storage.send(.registered(TrackedTaskKey(task), scope))
        return task
    }

    /// The tracked task itself, begun at once on this thread when `immediate`, its body ``runTracked(_:_:isolation:)``.
    private func makeTrackedTask<Success: Sendable>(
        _ scope: TrackedTaskScope,
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Success,
        immediate: Bool
    ) -> Task<Success, any Error> {
        let isolation = operation.isolation  // nil for a nonisolated operation
        let operation = TrackedOperation(operation)
        // When `immediate`, the body runs at once on this thread up to the gate, so its first trip through an executor
        // is the one its start sends it on; it is held there until `Task.immediate` has returned.
        if isolation === MainActor.shared {
            if immediate, #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
                return Task.immediate { @MainActor in
                    try await Self.runTracked(scope, operation, isolation: MainActor.shared)
                }
            }
            // Enqueued on the main actor itself: no part of the task waits for a thread of the global executor.
            return Task { @MainActor in try await Self.runTracked(scope, operation, isolation: MainActor.shared) }
        }
        // A nonisolated task, its child tasks and the default actors they enter run their jobs through an executor
        // that counts them, so the task settles only when no part of it runs (an actor-isolated task has none: a
        // main-actor one would give up the main actor at each call that takes an isolation). The task's closure keeps
        // the executor alive: a runtime may not.
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            let counting: TrackedTaskScope? = isolation == nil ? scope : nil
            let body: @Sendable () async throws -> Success = {
                _ = counting
                return try await Self.runTracked(scope, operation, isolation: isolation)
            }
            if immediate, #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
                return Task.immediate(executorPreference: counting, operation: body)
            }
            return Task(executorPreference: counting, operation: body)
        }
        return Task { try await Self.runTracked(scope, operation, isolation: isolation) }
    }

    /// Whether a tracked task's child tasks prefer an executor that counts their jobs, the task's own scope (see
    /// `makeTrackedTask`).
    static func childJobs(isolated: Bool) -> TrackedTasks.ChildJobs {
        guard !isolated else { return .uncountedInIsolatedTask }
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) { return .counted }
        return .uncountedWithoutTaskExecutors
    }

    /// Whether the runtime has `Task.immediate` (Linux; macOS 26, iOS 26 and the matching releases).
    static let beginsTasksImmediately =
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) { true } else { false }

    /// The body of a tracked task, on the operation's own isolation: the operation and the records of its start and
    /// end share one executor, so a main-actor task never hops through the global executor between them.
    private static func runTracked<Success: Sendable>(
        _ scope: TrackedTaskScope,
        _ operation: TrackedOperation<Success>,
        isolation: isolated (any Actor)?
    ) async throws -> Success {
        var started = false  // an error before the operation begins is not the operation's: nothing to report
        do {
            try await scope.waitForStart()  // throws only if the cancel came before the start ran
            started = true
            let value = try await operation.run()
            scope.finished(error: nil)
            return value
        } catch {
            scope.finished(error: started ? error : nil)
            throw error
        }
    }

    /// Awaits a task started with ``startTask(label:callSite:operation:)`` and claims its error, so the run
    /// methods and ``verifyIdle()`` do not report it; it is also this dispatcher's `TaskDispatcher.value(of:)`.
    ///
    /// ```swift
    /// await #expect(throws: FeedError.offline) { try await dispatcher.value(of: load) }
    /// ```
    ///
    /// Called from the test, the await is bounded by ``waitLimit``: a task that needs the test's next step, or one this
    /// dispatcher did not start, cannot finish while the test waits here (a `waitLimit` of zero or less awaits the
    /// latter without a bound). Inside a tracked task the await is part of its settling, and not bounded.
    ///
    /// - Parameter task: The task to await.
    /// - Returns: The task's value.
    /// - Throws: What the task threw, `CancellationError` if the calling task is cancelled while it waits (a task that
    ///   ends as the cancel comes gives its outcome), or ``ManualDispatcherError`` of kind
    ///   ``ManualDispatcherError/Kind/waitTimedOut(after:)``, or one left for the next call: a runaway auto-advance's,
    ///   or the report of uncounted tasks in a tracked task that finished.
    nonisolated(nonsending) public func value<Success: Sendable>(of task: Task<Success, any Error>) async throws
        -> Success
    {
        try await self.boundedValue(of: task)
    }

    /// Awaits a task that cannot throw, within ``waitLimit``: a plain `Task { await … }`, which `await task.value`
    /// would wait for without a bound. Bounded as ``value(of:)-(Task<Success,Error>)`` is for a task this dispatcher
    /// did not start.
    ///
    /// - Parameter task: The task to await.
    /// - Returns: The task's value.
    /// - Throws: `CancellationError` if the calling task is cancelled while it waits (a task that ends as the cancel
    ///   comes gives its value), or ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/waitTimedOut(after:)``,
    ///   or one left for the next call, as ``value(of:)-(Task<Success,Error>)`` throws it.
    nonisolated(nonsending) public func value<Success: Sendable>(of task: Task<Success, Never>) async throws -> Success
    {
        try await self.boundedValue(of: task)
    }

    /// The outcome of `task`, once it has finished; a value gives way to the report of a finished tracked task's
    /// uncounted tasks, if one waits for the next call, since the times behind the value may be wrong.
    nonisolated(nonsending) private func finishedValue<Success: Sendable, TaskFailure>(
        of task: Task<Success, TaskFailure>
    ) async throws -> Success {
        let value = try await task.value
        let late = self.storage.update { $0.takeLateUncountedTasksFailure(by: "value(of:)") }
        if let late { throw ManualDispatcherError(late) }
        return value
    }

    /// ``value(of:)-(Task<Success,Error>)`` for a task of either kind.
    nonisolated(nonsending) private func boundedValue<Success: Sendable, TaskFailure>(
        of task: Task<Success, TaskFailure>
    ) async throws -> Success {
        // Called from a task this dispatcher tracks: that task waits on `task`, and settles when `task` does.
        if let scope = self.storage.trackedCaller {
            return try await self.storage.value(of: task, awaitedBy: scope)
        }
        let key = TrackedTaskKey(task)
        // A call of the test's: auto-advance's runaway count starts again, as at a run method.
        self.storage.changeTrackedTasks { schedule in
            schedule.tracked.claim(key)
            schedule.autoAdvanceJumps = 0
        }
        // A task this dispatcher did not start: its value, within the limit. One of its own that finished gives its
        // value at once; a limit of zero or less cannot check once whether a task has finished, so it waits.
        let (tracked, finished) = self.storage.update { ($0.tracked.id(of: key), $0.tracked.finishedRecently(key)) }
        let limit = self.waitLimit
        guard let id = tracked else {
            // One of its own that has finished: the test waited for tracked work, as the wait below does on its end.
            if finished {
                self.storage.update { $0.tracked.waitedForWokenTasks() }
                return try await self.finishedValue(of: task)
            }
            guard limit > .zero else { return try await self.finishedValue(of: task) }
            // The test waits here: in auto-advance, the clock may move as tracked tasks settle (`ClockHold`).
            self.storage.send(.untrackedValueWait(begins: true))
            defer { self.storage.send(.untrackedValueWait(begins: false)) }
            let waiter = self.storage.update { $0.waiters.makeID() }
            Task { [weak storage = self.storage] in
                _ = await task.result
                storage?.send(.untrackedTaskEnded(waiter))
            }
            try await self.storage.wait(
                until: .untrackedTaskEnded, id: waiter, deadline: limit.dispatchDeadline, reporting: "value(of:)"
            ) { $0.failure(.untrackedTaskNotFinished(limit: limit)) }
            return try await self.finishedValue(of: task)
        }
        let deadline = limit.dispatchDeadline
        let waiter = self.storage.update { $0.waiters.makeID() }
        // Woken by the task's end, which the dispatcher records; bounded, since the task may need the test.
        while true {
            let outcome = await self.storage.suspend(
                until: .trackedTaskFinished(id), id: waiter, deadline: deadline, asTheTestsAwaitOfATask: true)
            if outcome == .cancelled {
                // A task that ended as the cancel came gave its error to this call's claim: its outcome, then. Else
                // the claim goes back, and an error it throws later is still reported.
                let ended = self.storage.update { schedule -> Bool in
                    guard !schedule.tracked.hasFinished(id) else { return true }
                    schedule.tracked.unclaim(key)
                    return false
                }
                guard ended else { throw CancellationError() }
                return try await self.finishedValue(of: task)
            }
            let timedOut = outcome == .timedOut ? limit : nil
            switch self.storage.update({ $0.valueWaitEnded(id, key: key, timedOutAfter: timedOut) }) {
            case .finished: return try await self.finishedValue(of: task)
            case .failed(let failure): throw ManualDispatcherError(failure)
            case .waitOn: continue  // within the same limit
            }
        }
    }

    /// The number of tasks started with ``startTask(label:callSite:operation:)`` that have not finished: their
    /// start is pending, or their operation has not returned.
    public var unfinishedTaskCount: Int {
        self.storage.read { $0.tracked.unfinishedCount }
    }
}

/// A tracked task's operation, taken out when the task runs it and let go of once it returns or throws: before the
/// task's end is recorded, which in auto-advance can move the clock at once, as `Task { }` has let go of its closure
/// by the time it ends.
final class TrackedOperation<Success: Sendable>: @unchecked Sendable {
    /// Set at creation, swapped out by the task's one run of it. (Not an optional: before macOS 15 and iOS 18 the
    /// runtime cannot wrap an `@isolated(any)` function in one.)
    private var body: @Sendable @isolated(any) () async throws -> Success

    init(_ body: @escaping @Sendable @isolated(any) () async throws -> Success) {
        self.body = body
    }

    /// Runs the operation on the caller's isolation (the operation's own), and lets go of it before returning.
    func run(isolation: isolated (any Actor)? = #isolation) async throws -> Success {
        let body = self.body
        self.body = { throw CancellationError() }  // run once only
        return try await body()
    }
}
