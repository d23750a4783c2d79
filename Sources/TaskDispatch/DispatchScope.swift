import Synchronization

/// A dispatcher that forwards to another and remembers the live work dispatched through it, so that its owner can
/// cancel all of it at once: ``cancelAll()``, or the scope's release.
///
/// A view model that polls, refreshes or counts down owns a scope and dispatches through it; when the model goes
/// away, so does everything it started:
///
/// ```swift
/// @MainActor final class ClockModel {
///     private let scope: DispatchScope
///     var seconds = 0
///
///     init(dispatcher: any TaskDispatcher) {
///         self.scope = DispatchScope(dispatcher)
///         scope.foreground(every: .seconds(1)) { [weak self] in self?.seconds += 1 }
///     }
/// }   // released: the series stops, pending work is cancelled, started tasks are cancelled
/// ```
///
/// It remembers callback tasks, awaitable runs, started tasks and series until each ends, so memory follows the live
/// work. ``cancelAll()`` (and `deinit`) cancels the work that has not started, ends awaits on it with
/// `CancellationError` and cancels started tasks; after it, every later dispatch is cancelled at once, so a late
/// callback cannot bring a released owner's work back. ``clock``, `startTask` and `value(of:)` forward to the
/// dispatcher beneath, so a test's `ManualDispatcher` sees everything. Over the package's own dispatchers a callback
/// task goes through as it is, for two short critical sections more (over `QueueDispatcher`, one at the task's end and
/// two atomic operations at the dispatch); other work, and any other dispatcher's, runs through an entry of the
/// scope's (an allocation more). See the article "Repeating work and dispatch scopes".
public final class DispatchScope: TaskDispatcher, BackgroundWorkWaiting {
    private let base: any TaskDispatcher
    private let registry: ScopeRegistry

    /// The clock of the dispatcher beneath, erased once; over a clock with ``AnyDispatcherClock/Instant``s already (a
    /// `ManualDispatcher`'s, a decorator's erased clock) it reads the same instants. A sleep on it is the base clock's:
    /// ``cancelAll()`` ends it through the task it runs in, when that task was started with the scope's `startTask`.
    public let clock: AnyDispatcherClock

    /// Creates a scope that forwards to `base`.
    ///
    /// Over another scope, this scope is cancelled with it (all its work runs through it), or at once if that scope
    /// is cancelled already. It holds `base`, so an outer scope is not released while an inner one lives: end its
    /// work with ``cancelAll()``.
    ///
    /// - Parameter base: The dispatcher that runs the work: a production dispatcher, a test's `ManualDispatcher`,
    ///   a decorator, or another scope.
    public init(_ base: some TaskDispatcher) {
        self.base = base
        self.registry = ScopeRegistry(carrier: (base as? any ScopeCarrying)?.scopeCarrier)
        self.clock = AnyDispatcherClock(keepingOriginOf: base.clock)
        if let outer = base as? DispatchScope, !outer.registry.adopt(self.registry) { self.registry.cancelAll() }
    }

    deinit {
        self.registry.cancelAll()
        self.registry.scopeReleased()
    }

    /// Forwards `task` to the dispatcher beneath and remembers it until it runs or is cancelled; after
    /// ``cancelAll()``, cancels it at once.
    ///
    /// - Parameter task: The task to run.
    /// - Returns: A handle that cancels the task until it starts.
    /// - Complexity: O(1), besides the dispatcher beneath.
    @discardableResult
    public func dispatch(_ task: DispatchedTask) -> TaskHandle {
        // A plain callback task over one of the package's dispatchers: forwarded as it is, with a slot in the
        // registry that the dispatcher frees at the task's end. Anything else runs through an entry.
        if task.series == nil, task.awaitIdentity == 0, let inner = self.registry.forward(task) {
            return inner
        }
        let entry = DispatchEntry(task, registry: self.registry)
        var forwarded = task
        entry.takeClosure(of: &forwarded)
        // Cancelled: the dispatcher beneath never sees the task (no timer, no jump of an auto-advancing clock).
        if self.registry.isCancelled {
            entry.endedByScope()
            entry.scopeCancelled()
        } else {
            entry.accepted(self.base.dispatch(forwarded))
        }
        return TaskHandle(canceller: entry)
    }

    /// Starts the task through the dispatcher beneath and remembers it until it ends; once ``cancelAll()`` has
    /// returned, returns a cancelled task that never runs `operation` and throws `CancellationError`.
    ///
    /// - Parameters:
    ///   - label: A short name shown in diagnostics.
    ///   - callSite: Where the task was started.
    ///   - operation: The task's body.
    /// - Returns: The task, to await or cancel.
    @discardableResult
    public func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        // Not started at all: a task started and then cancelled may already be running, uncancelled, on another thread.
        guard !self.registry.isCancelled else {
            let task = Task<Success, any Error> { throw CancellationError() }
            task.cancel()
            return task
        }
        let task = self.base.startTask(label: label, callSite: callSite, operation: operation)
        let entry = DispatchEntry(started: task, registry: self.registry)
        let accepted = self.registry.state.withLock { state -> Bool in
            guard !state.isCancelled else { return false }
            state.insert(entry)
            return true
        }
        guard accepted else {
            task.cancel()
            return task
        }
        Task.detached { [registry = self.registry] in
            _ = await task.result
            registry.state.withLock { $0.remove(entry) }
        }
        return task
    }

    /// Awaits `task` through the dispatcher beneath.
    ///
    /// - Parameter task: The task to await.
    /// - Returns: The task's value.
    /// - Throws: What the task threw, or the dispatcher beneath's error for a wait it bounds.
    nonisolated(nonsending) public func value<Success: Sendable>(of task: Task<Success, any Error>) async throws
        -> Success
    {
        try await self.base.value(of: task)
    }

    /// Cancels all the live work dispatched or started through this scope, and every dispatch after it.
    ///
    /// A task already running, or starting on another thread as `cancelAll()` runs, runs to its end; a later
    /// `startTask` returns a cancelled task that never runs. Safe to call from any thread, any number of times;
    /// `deinit` calls it too.
    ///
    /// - Complexity: O(n) in the live work.
    public func cancelAll() {
        self.registry.cancelAll()
    }

    /// Whether the scope is cancelled: ``cancelAll()`` was called on it, or on the scope it was made over (which this
    /// scope holds, so that one is not released while this one lives).
    public var isCancelled: Bool {
        self.registry.isCancelled
    }

    /// The number of tasks, awaitable runs, started tasks and pending series ticks the scope remembers: those that
    /// have neither ended nor been cancelled. A callback task leaves it when it has run or is cancelled; a started task
    /// shortly after its end, when a watcher sees it end (a test that checks the count right after awaiting the task
    /// may see it once more).
    public var liveWorkCount: Int {
        self.registry.liveWorkCount
    }

    /// The registry's slots that stand for a task (the package's tests check that none is left behind).
    var occupiedSlotCount: Int {
        self.registry.occupiedSlotCount
    }

    /// Suspends until no background task dispatched through this scope is outstanding, `timeout` passes (`nil`: no
    /// limit), or the calling task is cancelled: the requirement of ``BackgroundWorkWaiting``, over this scope's work
    /// only. A live background series keeps it waiting: cancel the series first.
    ///
    /// - Parameter timeout: How long to wait at most; `nil` waits without a limit (see ``BackgroundWorkWaiting``).
    /// - Returns: `true` if the background work finished, `false` if the timeout passed first or the calling task
    ///   was cancelled.
    @discardableResult
    public func waitForBackgroundTasks(timeout: Duration? = nil) async -> Bool {
        await self.registry.tracker.finished(timeout: timeout)
    }
}
