import Dispatch
import TaskDispatch

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Bionic)
    import Bionic
#endif

/// A value guarded by a mutex, with a condition variable to wait on for changes to it: the lock of ``Storage``
/// (`Mutex` needs macOS 15 and has no condition). `@unchecked Sendable`: the value is used only under `mutex`.
final class Monitor<Value: Sendable>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let value = UnsafeMutablePointer<Value>.allocate(capacity: 1)
    #if DEBUG
        /// How many times the mutex was taken (both ways of taking it count); guarded by it.
        private var acquisitions = 0
    #endif

    init(_ value: Value) {
        self.value.initialize(to: value)
        #if canImport(Glibc)
            // Adaptive: a contended lock spins briefly before it sleeps, as Darwin's does; it is held for a few
            // hundred nanoseconds at a time, and a kernel sleep and wake would cost microseconds.
            var attributes = pthread_mutexattr_t()
            pthread_mutexattr_init(&attributes)
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
            let locked = pthread_mutex_init(self.mutex, &attributes)
            pthread_mutexattr_destroy(&attributes)
        #else
            let locked = pthread_mutex_init(self.mutex, nil)
        #endif
        precondition(locked == 0, "pthread_mutex_init failed with \(locked)")
        let conditioned = pthread_cond_init(self.condition, nil)
        precondition(conditioned == 0, "pthread_cond_init failed with \(conditioned)")
    }

    deinit {
        pthread_cond_destroy(self.condition)
        pthread_mutex_destroy(self.mutex)
        self.value.deinitialize(count: 1)
        self.value.deallocate()
        self.condition.deallocate()
        self.mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value; not recursive.
    @inline(__always)
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        #if DEBUG
            self.acquisitions += 1
        #endif
        return try body(&self.value.pointee)
    }

    /// Runs `body` with exclusive access to the value until it returns a result; while it returns `nil`, waits
    /// for ``broadcast()`` (the lock released during the wait) and runs it again.
    func waitForResult<Result>(_ body: (inout Value) -> Result?) -> Result {
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        #if DEBUG
            self.acquisitions += 1
        #endif
        while true {
            if let result = body(&self.value.pointee) { return result }
            pthread_cond_wait(self.condition, self.mutex)
        }
    }

    #if DEBUG
        /// How many times the lock has been taken so far, read without counting this read; for the package's tests.
        var acquisitionCount: Int {
            pthread_mutex_lock(self.mutex)
            defer { pthread_mutex_unlock(self.mutex) }
            return self.acquisitions
        }
    #endif

    /// Wakes every thread blocked until a result comes.
    func broadcast() {
        pthread_cond_broadcast(self.condition)
    }
}

/// The only owner of a ``ManualDispatcher``'s lock: each method takes it once, calls the engine (``Schedule``) and
/// does the rest after unlocking: resume waiters, run work, drain, set timers.
final class Storage: Sendable {
    /// The engine, behind the lock. Read directly only by the package's tests.
    let monitor: Monitor<Schedule>
    /// The dispatcher's ``ManualDispatcher/waitLimit``.
    let waitLimit: Duration

    init(_ schedule: Schedule, waitLimit: Duration) {
        self.monitor = Monitor(schedule)
        self.waitLimit = waitLimit
    }

    /// A query of the engine that changes nothing, in one critical section.
    @inline(__always)
    func read<Result>(_ query: (borrowing Schedule) -> Result) -> Result {
        self.monitor.withLock { query($0) }
    }

    /// A change of the engine in one critical section, with no `Action` to perform after unlocking (what it returns,
    /// such as a released closure, goes after the unlock).
    @inline(__always)
    func update<Result>(_ change: (inout Schedule) -> Result) -> Result {
        self.monitor.withLock(change)
    }

    /// The tracked task of this dispatcher that the calling code runs in (or in a child task or `Task` of), if any.
    var trackedCaller: TrackedTaskScope? {
        TrackedTaskScope.current.flatMap { $0.storage === self ? $0 : nil }
    }

    /// Handles `event` and performs its action.
    func send(_ event: Schedule.Event) {
        let thread = currentThreadIdentity()
        self.performUnlessEmpty(self.monitor.withLock { $0.handle(event, thread: thread) })
    }

    /// Makes `change` to the tracked tasks and performs what follows (see ``Schedule/trackedTasksChanged(thread:by:)``).
    @inline(__always)
    func changeTrackedTasks(_ change: (inout Schedule) -> Void = { _ in }) {
        let thread = currentThreadIdentity()
        self.performUnlessEmpty(self.monitor.withLock { $0.trackedTasksChanged(thread: thread, by: change) })
    }

    /// ``perform(_:observing:)``, with the case of most events (nothing to do) checked here instead of in a call.
    @inline(__always)
    func performUnlessEmpty(_ action: Schedule.Action) {
        if case .proceed(let effects) = action, effects.isEmpty { return }
        self.perform(action)
    }

    /// Performs an event's action after its critical section: its effects, then the drain this thread claimed.
    /// `observing: false` leaves the package's observer to the caller.
    func perform(_ action: Schedule.Action, observing: Bool = true) {
        switch action {
        case .proceed(let effects):
            self.perform(effects, observing: observing)
        case .drain(let effects):
            self.perform(effects, observing: false)
            self.drainUnbound(Run("auto-drain", .autoDrain))
            if observing, let observe = effects.rare?.value.observe { TaskTracking.$scope.withValue(nil) { observe() } }
        case .assist:
            // The waiting async drain's due tasks, in a tracked task's awaited dispatch (see `WaitingSettles`).
            self.drainUnbound(Run("assist", .assist))
        case .run(let step):
            self.execute(step)
        case .fail, .paused:
            break  // the caller's: it throws, or checks its condition
        }
    }

    @inline(__always)
    private func perform(_ effects: Schedule.Effects, observing: Bool) {
        guard !effects.isEmpty else { return }
        let rare = effects.rare  // a cancelled task's closure, and what it captured, go with it: outside the lock
        if let woken = effects.woken { for resumer in woken { resumer.resume(returning: .conditionMet) } }
        if let (continuation, outcome) = rare?.value.gate { continuation.resume(with: outcome) }
        if let (resumers, outcome) = rare?.value.ended {
            for resumer in resumers { resumer.resume(returning: outcome) }
        }
        // The closure is released outside the lock, before the await resumes.
        if let (awaiting, failure, work) = rare?.value.failedAwait {
            awaiting.fail(with: ManualDispatcherError(failure), releasing: work)
        }
        if effects.broadcast { self.monitor.broadcast() }
        if let deadline = effects.arm {
            // The one timer of the waits (see `DispatchWaiters.timerDeadline`); it holds the storage weakly.
            DispatchQueue.global().asyncAfter(deadline: deadline) { [weak self] in
                self?.send(.waitTimerFired(deadline))
            }
        }
        if let report = rare?.value.report { writeToStandardError(report) }
        // The test's seam runs as the test would, from outside the tracked task: a run method is refused inside it.
        if observing, let observe = rare?.value.observe { TaskTracking.$scope.withValue(nil) { observe() } }
    }
}

// MARK: - Dispatching

extension Storage: ScopeCarrier {
    /// Takes `task` in; an awaited one is bounded in real time unless a tracked task of this dispatcher awaits it.
    @inline(__always)
    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        // Two inlined calls of `record`, so that a plain dispatch, the hot path, carries nothing of the bound.
        guard let call = AwaitableCall.awaiting(task) else { return self.record(nil) { $0.accept(task) } }
        return self.record(nil, awaitedBy: call.awaiter, describedAs: call.description) { $0.accept(task) }
    }

    /// Takes in `task`, a plain callback task forwarded through `scope` (see `ScopeCarrying`): admitted under the
    /// lock, before a run can see it; one the scope refuses (it was cancelled) is cancelled there too, so that no
    /// run, and no jump of auto-advance's clock, comes for it.
    func dispatch(_ task: DispatchedTask, joining scope: ScopeRegistry) -> TaskHandle {
        var refused: DispatchedTask.Work??
        let countingBackground = task.countsAsBackgroundWork
        let handle = self.record(nil) { schedule in
            let scheduled = schedule.accept(task, joining: scope, countingBackground: countingBackground)
            if !scheduled.isAdmitted { refused = schedule.cancel(scheduled) }  // its closure goes outside the lock
            return scheduled
        }
        return refused == nil ? handle : TaskHandle(canceller: RefusedTask())
    }

    /// Cancels the pending tasks among `tasks` in one critical section, for their scope's `cancelAll()`: no run claims
    /// one of them in between.
    func cancel(_ tasks: [AnyObject]) {
        let cancelled = self.update { schedule in
            tasks.compactMap { task -> (ScheduledTask, DispatchedTask.Work?)? in
                let task = unsafeDowncast(task, to: ScheduledTask.self)
                return schedule.cancel(task).map { (task, $0) }
            }
        }
        for (task, _) in cancelled { task.cancelled() }  // the closures go with the array, outside the lock
    }

    /// Records a tracked task and takes in its start, in one critical section: the scope, and whether its body begins
    /// on this thread, held there.
    func startTrackedTask(label: String?, callSite: CallSite, isolation: (any Actor)?)
        -> (scope: TrackedTaskScope, immediate: Bool)
    {
        let onMainActor = isolation === MainActor.shared
        let childJobs = ManualDispatcher.childJobs(isolated: isolation != nil)
        var made: (TrackedTaskScope, Bool)?
        _ = self.record(nil, readingTheBoundWait: false) { schedule in
            let id = schedule.tracked.begin(
                label: label, callSite: callSite, onMainActor: onMainActor, childJobs: childJobs)
            let scope = TrackedTaskScope(
                storage: self, id: id, label: label, callSite: callSite, countsChildJobs: childJobs == .counted)
            // The body goes on once the start is recorded and the lock released (the start runs under a claim, so
            // the event claims no drain that would come first). The scope is all it captures: no context to allocate.
            let start: @Sendable () -> Void = { [scope] in
                scope.storage.changeTrackedTasks { scope.startRan(in: &$0) }
                scope.resumeAdmitted()
            }
            let scheduled = schedule.accept(
                DispatchedTask(
                    unbound: onMainActor ? .foreground(start) : .background(start), label: label, callSite: callSite))
            scope.startTask = scheduled
            // In manual mode nothing runs the start inside this dispatch (auto-drain runs it at once).
            let immediate = ManualDispatcher.beginsTasksImmediately && !schedule.autoDrain
            scope.heldForCaller = immediate
            made = (scope, immediate)
            return scheduled
        }
        guard let made else { preconditionFailure("the start's dispatch did not accept it") }
        return made
    }

    /// Takes a task in with `accept` and records a tracked task's wait on it (`ownedWait`, else the awaitable
    /// dispatch's bound wait unless `readingTheBoundWait` is false), in one critical section, then performs the action
    /// and bounds `awaiter` in real time unless a tracked task waits.
    @inline(__always)
    func record(
        _ ownedWait: OwnedWait?,
        readingTheBoundWait: Bool = true,
        awaitedBy awaiter: (any TaskAwaiter)? = nil,
        describedAs what: @autoclosure () -> String = "",
        _ accept: (inout Schedule) -> ScheduledTask
    ) -> TaskHandle {
        let (scheduled, byTrackedTask, action) = self.monitor.withLock { schedule in
            let scheduled = accept(&schedule)
            // The awaiting code can cancel the task from here on; an await whose task was cancelled first ends once
            // the dispatch returns, and its wait is not recorded.
            let awaitGoesOn =
                awaiter?.accepted(TaskHandle(canceller: ManualCanceller(storage: self, task: scheduled))) ?? true
            let wait =
                schedule.tracked.unfinishedCount == 0
                ? nil
                : ownedWait ?? (readingTheBoundWait ? TaskTracking.dispatchingWait.flatMap({ $0 as? OwnedWait }) : nil)
            let (byTrackedTask, action) = schedule.accepted(
                scheduled, wait: wait, of: self, awaited: awaiter != nil, awaitGoesOn: awaitGoesOn)
            return (scheduled, byTrackedTask, action)
        }
        self.performUnlessEmpty(action)
        if let awaiter, !byTrackedTask { self.bound(awaiter, of: scheduled, describedAs: what()) }
        return TaskHandle(canceller: ManualCanceller(storage: self, task: scheduled))
    }

    /// Bounds an await of `task` from outside the tracked tasks: still pending ``waitLimit`` after its dispatch, `task`
    /// is cancelled and the await fails, naming `what`. The timer holds nothing strongly.
    private func bound(_ awaiting: any TaskAwaiter, of task: ScheduledTask, describedAs what: String) {
        // A task that auto-drain ran inside the dispatch needs no timer: most awaits in that mode.
        guard self.read({ _ in task.isPending }) else { return }
        DispatchQueue.global().asyncAfter(deadline: self.waitLimit.dispatchDeadline) {
            [weak self, weak task, weak awaiting] in
            guard let self, let task, let awaiting else { return }
            self.send(.awaitBoundPassed(task, awaiting, what: what, limit: self.waitLimit))
        }
    }

}

/// The canceller behind a ``ManualDispatcher``'s handles: the storage and the task.
///
/// Two references fit in the handle's inline existential buffer, so handing out a handle allocates nothing.
struct ManualCanceller: TaskCancelling {
    let storage: Storage
    let task: ScheduledTask

    /// Cancels the task if it is pending; its closure, and what it captured, is released here: outside the lock.
    func cancelTask() -> Bool {
        guard self.storage.update({ $0.cancel(self.task) }) != nil else { return false }
        self.task.cancelled()
        return true
    }

    var isTaskCancelled: Bool {
        self.storage.read { [task] _ in task.state == .cancelled }
    }
}

// MARK: - Running

extension Storage {
    /// Runs the synchronous `run` from its claim (blocked while another thread runs tasks) to its end or next pause
    /// (`true`: the caller checks its condition, then resumes or sends `runEnded`); `target` takes the start's time.
    @discardableResult
    func run(_ run: inout Run, target: (_ now: Int64) -> Int64 = { _ in TaskKey.latestTime })
        throws(ManualDispatcherError) -> Bool
    {
        try self.refuseTrackedCaller(run.method, isAsync: false)
        let thread = currentThreadIdentity()
        run.holdsClock = true
        run.blocksMainActor = MainActorExecution.isOnMainActor
        let first = self.monitor.waitForResult { $0.begin(&run, thread: thread, target: target) }
        return try self.resume(&run, from: consume first)
    }

    /// The one drain loop: goes on with `run` (after its beginning, or a pause), one critical section a task (see
    /// ``Schedule/next(_:)``), from `first` if the run's beginning gave an action. `true`: it paused.
    ///
    /// Each step is owned by the loop alone and let go of once it ran, so a task's closure, and what it captured, is
    /// released before the next task runs, as in production (hence `consuming` and `take()` along the way).
    @discardableResult
    func resume(_ run: inout Run, from first: consuming Schedule.Action? = nil) throws(ManualDispatcherError) -> Bool {
        if case .paused = try self.resume(&run, from: first.take(), handingOffForeground: false) { return true }
        return false
    }

    /// Where the drain loop stopped.
    private enum Stop {
        case ended, paused
        /// A foreground task's step, handed to the async caller to run on the main queue.
        case foreground(HandedOffStep)
    }

    /// The drain loop; with `handingOffForeground`, it stops at a foreground task instead of running it, for an async
    /// caller off the main actor to run there without blocking its thread.
    private func resume(_ run: inout Run, from first: consuming Schedule.Action?, handingOffForeground: Bool)
        throws(ManualDispatcherError) -> Stop
    {
        var next = first.take()
        while true {
            let action = next.take() ?? self.monitor.withLock { $0.next(&run) }
            switch action {
            case .run(let step):
                if handingOffForeground, case .foreground = step.work { return .foreground(HandedOffStep(step)) }
                self.execute(step)
            case .paused:
                return .paused
            case .fail(let failure):
                if run.isClaimed { self.send(.runEnded) } else { self.monitor.broadcast() }
                throw ManualDispatcherError(failure)
            default:
                self.perform(action)
                return .ended
            }
        }
    }

    /// The async ``run(_:target:)``: while another thread runs tasks it suspends as waiter `id` until `deadline` (then
    /// throws `concurrentRun`); a pause releases the claim. `errors`: those its first claim reports.
    nonisolated(nonsending) func run(
        _ run: inout Run,
        waiter id: DispatchWaiters<WaitResumer>.ID,
        until deadline: DispatchTime,
        limit: Duration,
        reporting errors: TrackedTasks.ErrorsToReport,
        target: (_ now: Int64) -> Int64 = { $0 }
    ) async throws -> Bool {
        try self.refuseTrackedCaller(run.method, isAsync: true)
        while true {
            let thread = currentThreadIdentity()  // again after each suspension: the call may resume elsewhere
            var next = self.monitor.withLock { $0.begin(&run, thread: thread, reporting: errors, target: target) }
            if next != nil {
                // Off the main actor, a foreground task runs as a block on the main queue while this call is
                // suspended, not blocked: its thread is the cooperative pool's, or an executor's.
                let handingOff = !MainActorExecution.isOnMainActor
                while true {
                    switch try self.resume(&run, from: next.take(), handingOffForeground: handingOff) {
                    case .foreground(let step):
                        await self.executeOnTheMainQueue(step)
                    case .ended:
                        return false
                    case .paused:
                        self.send(.runEnded)
                        run.isClaimed = false
                        return true
                    }
                }
            }
            try await self.wait(until: .runReleased, id: id, deadline: deadline) { schedule in
                schedule.claim.map {  // nil: released as the timer fired
                    schedule.failure(
                        .runNotReleased(
                            method: run.method, running: $0.method, limit: limit,
                            executing: schedule.executingTask))
                }
            }
        }
    }

    /// Runs a foreground task's step as a block on the main queue, suspended meanwhile; the claim names no thread
    /// until the call resumes, on a thread that may differ, so that other code on the freed thread is not taken for
    /// the run's own.
    nonisolated(nonsending) private func executeOnTheMainQueue(_ step: HandedOffStep) async {
        self.update { $0.claim?.thread = 0 }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.main.async {
                step.run(in: self)
                // Ended here, as in `executeThroughTheMainQueue(_:)`; the lock, taken again as the call resumes, also
                // orders the task's writes before the caller's reads for the thread sanitizer, which on Linux does not
                // see the continuation's resume as doing so.
                self.update { $0.endExecution() }
                continuation.resume()
            }
        }
        let thread = currentThreadIdentity()
        self.update { $0.claim?.thread = thread }
    }

    /// Refuses run method `method` from one of this dispatcher's tracked tasks: an async drain there would wait for
    /// itself, and a synchronous one would move the clock under the other tracked tasks.
    private func refuseTrackedCaller(_ method: String, isAsync: Bool) throws(ManualDispatcherError) {
        guard let scope = self.trackedCaller else { return }
        throw ManualDispatcherError(
            self.read {
                $0.failure(.runFromTrackedTask(method: method, task: $0.tracked.name(scope.id), isAsync: isAsync))
            })
    }

    /// Runs a task's closure outside the lock (see ``ScheduledTask/execute(_:)``).
    @inline(__always)
    func execute(_ step: Schedule.Step) {
        guard case .foreground = step.work else { return step.run.task.execute(step.work) }
        guard MainActorExecution.isOnMainActor else { return self.executeThroughTheMainQueue(step) }
        self.executeOnTheMainActor(step)
    }

    /// Runs a foreground task's closure, on the main actor, as the ``ForegroundBody`` running there.
    private func executeOnTheMainActor(_ step: Schedule.Step) {
        MainActor.assumeIsolated {
            ForegroundBody.running.append((ObjectIdentifier(self), step.run.task.key.sequence))
            defer { ForegroundBody.running.removeLast() }
            step.run.task.execute(step.work)
        }
    }

    /// A foreground task run from another thread: its execution ends on the main queue, before the main actor goes on
    /// to code the task resumed there (the test's `verifyIdle()` after its `value(of:)`), which then finds it ended.
    @inline(never)
    private func executeThroughTheMainQueue(_ step: Schedule.Step) {
        DispatchQueue.main.sync {
            self.executeOnTheMainActor(step)
            self.update { $0.endExecution() }
        }
    }

    /// Drains `run` (an auto-drain or an assist, which hold the claim and never fail) off the tracked task's
    /// task-locals: the work runs for other code, and what it dispatches is not the tracked task's.
    private func drainUnbound(_ run: @autoclosure () -> Run) {
        guard TaskTracking.scope != nil || TaskTracking.dispatchingCall != nil else { return self.drainHere(run()) }
        TaskTracking.$dispatchingCall.withValue(nil) {
            TaskTracking.$scope.withValue(nil) { self.drainHere(run()) }
        }
    }

    /// Made by the caller and consumed here: a run is a large value, and a copy of it costs the auto-drain.
    private func drainHere(_ run: consuming Run) {
        _ = try? self.resume(&run)
    }

    /// The timer of auto-advance's hold `generation` fired (see ``ClockHold``): if the clock is still held, it moves
    /// now and from now on without waiting for the test, with a note on standard error.
    func clockHoldTimerFired(for generation: UInt64, dispatcherCreatedAt createdAt: CallSite) {
        let thread = currentThreadIdentity()
        let (next, action) = self.monitor.withLock { schedule -> (Int64?, Schedule.Action) in
            guard let next = schedule.clockHoldTimerFired(for: generation) else { return (nil, .none) }
            return (next, schedule.claimForAutoDrain(thread: thread) ? .drain(Schedule.Effects()) : .none)
        }
        guard let next else { return }
        writeToStandardError(
            """
            ManualDispatcher (autoAdvance, created at \(createdAt)): every tracked task had settled and the clock \
            could move to \(formatTime(next)), but the test did not wait on the dispatcher for \
            \(formatRealTimeLimit(self.waitLimit)): it awaited something the dispatcher cannot see (a tracked task's \
            `task.value`, code that awaits one, an XCTest expectation), or nothing (a preview). The clock moves \
            now, and from now on without waiting for the test, so a task the test starts next may start late. In \
            a test, await through the dispatcher instead: `try await dispatcher.value(of: task)`, `try await \
            dispatcher.value(of: Task { await model.refresh() })` for code that awaits a task itself, or `try \
            await dispatcher.runUntilIdle()`.

            """
        )
        self.perform(action)
    }
}

// MARK: - Waiting, and a tracked task's await

extension Storage {
    /// Suspends until `condition` holds, `deadline` passes or the task is cancelled. The check and the registration
    /// share one section, so a dispatch is seen or wakes the waiter; whoever removes it resumes it once. The test's
    /// `value(of:)` (`asTheTestsAwaitOfATask`) lets auto-advance make a jump held for it (see `ClockHold`).
    func suspend(
        until condition: DispatchWaiters<WaitResumer>.Condition,
        id: DispatchWaiters<WaitResumer>.ID,
        deadline: DispatchTime,
        asTheTestsAwaitOfATask: Bool = false,
        isolation: isolated (any Actor)? = #isolation
    ) async -> WaitOutcome {
        await withTaskCancellationHandler {
            _ = isolation  // names the isolation, so the closure keeps it: the caller resumes without a hop
            return await withCheckedContinuation { (continuation: CheckedContinuation<WaitOutcome, Never>) in
                let thread = currentThreadIdentity()
                let action = self.monitor.withLock {
                    $0.register(
                        id, until: condition, resumer: continuation, deadline: deadline,
                        asTheTestsAwaitOfATask: asTheTestsAwaitOfATask, thread: thread)
                }
                self.perform(action, observing: false)
                // The cancellation handler runs at once if the task was cancelled before it was installed, or
                // concurrently with this closure: one of the two sees the waiter registered (if it registered).
                guard !Task.isCancelled else { return self.send(.waitCancelled(id)) }
                // The test's seam runs as the test would, from outside the tracked task.
                if let observe = action.effects.rare?.value.observe { TaskTracking.$scope.withValue(nil) { observe() } }
            }
        } onCancel: {
            self.send(.waitCancelled(id))
        }
    }

    /// Suspends until `condition` holds; at `deadline`, throws the failure `timedOut` finds, unless the condition came
    /// to hold as the timer fired; throws `CancellationError` if the calling task is. Met, it throws a failure left for
    /// the next call, which `method` then reports, if it names one.
    nonisolated(nonsending) func wait(
        until condition: DispatchWaiters<WaitResumer>.Condition,
        id: DispatchWaiters<WaitResumer>.ID,
        deadline: DispatchTime,
        reporting method: String? = nil,
        orThrow timedOut: (borrowing Schedule) -> Failure?
    ) async throws {
        switch await self.suspend(until: condition, id: id, deadline: deadline) {
        case .conditionMet:
            // Taking the lock the waking event held orders what came before that event before the caller's reads,
            // for the thread sanitizer (see `executeOnTheMainQueue(_:)`); the other waits take it after waking anyway.
            let left = self.update { schedule in method.flatMap { schedule.takeDeferredFailure(by: $0) } }
            if let left { throw ManualDispatcherError(left) }
        case .cancelled: throw CancellationError()
        case .timedOut:
            let failure = self.update { $0.holds(condition, for: id) ? nil : timedOut($0) }
            if let failure { throw ManualDispatcherError(failure) }
        }
    }

    /// Waits within `limit`, running nothing, until every cancelled tracked task has finished or the caller is
    /// cancelled.
    func awaitCancelledTrackedTasks(within limit: Duration) async {
        let deadline = limit.dispatchDeadline
        while let (id, waiter) = self.monitor.withLock({ schedule in
            schedule.tracked.firstCancelledUnfinished.map { ($0, schedule.waiters.makeID()) }
        }) {
            // Timed out or cancelled: the check reports.
            guard await self.suspend(until: .cancelledTaskFinished(id), id: waiter, deadline: deadline) == .conditionMet
            else { return }
        }
    }

    /// The paused async drain `run` waits as `id` for a due task or its tracked tasks to settle, until `deadline(now)`.
    /// Tasks run for it meanwhile (the assist, see `WaitingSettles`) count in `run`, and make a time-out a wake-up.
    nonisolated(nonsending) func awaitSettled(
        _ run: inout Run, id: DispatchWaiters<WaitResumer>.ID, deadline: (_ now: Int64) -> DispatchTime
    ) async -> WaitOutcome {
        let onMainActor = MainActorExecution.isOnMainActor
        let now = self.monitor.withLock {
            let budget = Swift.max(0, run.start.bound(runawayLimit: $0.runawayLimit) - run.ran)
            $0.waitingSettles.entries[id] = .init(method: run.method, budget: budget, onMainActor: onMainActor)
            return $0.now
        }
        let woke = await self.suspend(until: .dueTaskOrSettled, id: id, deadline: deadline(now))
        let ranForIt = self.monitor.withLock { $0.waitingSettles.entries.removeValue(forKey: id)?.ran ?? 0 }
        run.ran += ranForIt
        return woke == .timedOut && ranForIt > 0 ? .conditionMet : woke
    }

    /// Awaits `task` from the tracked task of `scope` (or a child task of it), without a bound: claims the error of
    /// `task` if the dispatcher tracks it, and records the await, so that the caller is settled while `task` is.
    nonisolated(nonsending) func value<Success: Sendable, TaskFailure>(
        of task: Task<Success, TaskFailure>, awaitedBy scope: TrackedTaskScope
    ) async throws -> Success {
        let key = TrackedTaskKey(task)
        let awaitingTask = scope.currentTask
        let offTheExecutor = scope.currentTaskOffTheExecutor
        let thread = currentThreadIdentity()
        let (awaited, action) = self.monitor.withLock { schedule in
            schedule.tracked.claim(key)
            let awaited = schedule.tracked.id(of: key)
            if let awaited {
                schedule.tracked.beginAwaiting(
                    scope.id, awaited, byAnotherTask: awaitingTask != scope.taskIdentity,
                    offTheExecutor: offTheExecutor)
            }
            return (awaited, schedule.trackedTasksChanged(thread: thread))
        }
        self.perform(action)
        defer {
            if let awaited { self.changeTrackedTasks { $0.tracked.endAwaiting(scope.id, awaited) } }
        }
        return try await task.value
    }
}

// MARK: - Verifying

extension Storage {
    /// `verifyIdle()`'s failure, if any, checked in a critical section that finds no other thread running a task:
    /// while one does, it waits within the wait limit, so the check does not report the task that just woke the test.
    func idleFailure(thread: UInt, onMainActor: Bool) -> Failure? {
        var awaited: (sequence: UInt64, deadline: DispatchTime)?
        var failure: Failure?
        while let check = self.monitor.withLock({ schedule -> DispatchSemaphore? in
            if let sequence = schedule.executingElsewhere(thread: thread, onMainActor: onMainActor),
                awaited.map({ $0.sequence == sequence && DispatchTime.now() < $0.deadline }) ?? true
            {
                let check = DispatchSemaphore(value: 0)
                schedule.idleChecks.append(check)
                schedule.idleCheckObserver?()
                if awaited == nil { awaited = (sequence, self.waitLimit.dispatchDeadline) }
                return check
            }
            failure = schedule.idleFailure(thread: thread, onMainActor: onMainActor, limit: self.waitLimit)
            return nil
        }) {
            _ = check.wait(timeout: awaited?.deadline ?? .now())
        }
        return failure
    }
}

/// A foreground step on its way to the main queue: the block that runs it takes it out, so that neither the block
/// nor the suspended drain keeps the task's closure once it ran.
final class HandedOffStep: @unchecked Sendable {
    /// Written once, then taken by the one block that runs it.
    private var step: Schedule.Step?

    init(_ step: consuming Schedule.Step) {
        self.step = step
    }

    func run(in storage: Storage) {
        if let step = self.step.take() { storage.execute(step) }
    }
}
