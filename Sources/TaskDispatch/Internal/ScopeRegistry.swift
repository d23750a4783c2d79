/// The live work of one ``DispatchScope``: a slot table of entries (a slot freed when its work ends is reused, so
/// memory follows the live work), whether the scope was cancelled, and the count of its background work.
///
/// `@unchecked Sendable`: the table and each entry's mutable fields are read and written only under `state`'s lock.
final class ScopeRegistry: @unchecked Sendable {
    struct State: @unchecked Sendable {
        var entries: [ScopeEntry?] = []
        var free: [Int] = []
        var isCancelled = false
        var liveCount = 0

        mutating func insert(_ entry: ScopeEntry) {
            if let slot = self.free.popLast() {
                self.entries[slot] = entry
                entry.slot = slot
            } else {
                entry.slot = self.entries.count
                self.entries.append(entry)
            }
            self.liveCount += 1
        }

        mutating func remove(_ entry: ScopeEntry) {
            guard entry.slot >= 0 else { return }
            self.entries[entry.slot] = nil
            self.free.append(entry.slot)
            entry.slot = -1
            self.liveCount -= 1
        }
    }

    let state = LockedValue(State())
    let tracker = BackgroundWorkTracker()

    /// Marks the scope cancelled and ends every live entry; each entry's own cancellation (`scopeCancelled()`) runs
    /// outside the lock.
    func cancelAll() {
        let entries = self.state.withLock { state -> [ScopeEntry] in
            state.isCancelled = true
            let live = state.entries.compactMap { $0 }
            for entry in live {
                entry.slot = -1
                entry.endedByScope()
            }
            state.entries = []
            state.free = []
            state.liveCount = 0
            return live
        }
        for entry in entries { entry.scopeCancelled() }
    }
}

/// One piece of live work in a ``ScopeRegistry``.
///
/// `@unchecked Sendable`: `slot` and the subclasses' mutable fields are guarded by the registry's lock.
class ScopeEntry: @unchecked Sendable {
    /// The entry's index in the registry's table; -1 when it is not in it.
    @exclusivity(unchecked) var slot = -1

    /// Called under the registry's lock by ``ScopeRegistry/cancelAll()``: the entry takes what its cancellation needs.
    func endedByScope() {}

    /// Called outside the lock once ``ScopeRegistry/cancelAll()`` removed the entry: cancels the work.
    func scopeCancelled() {}
}

/// A task dispatched through a scope: its closure, run through the entry so that it runs only while the scope lives,
/// and the handle of the dispatcher beneath. It is the canceller of the handle the scope returns.
final class DispatchEntry: ScopeEntry, TaskCancelling, @unchecked Sendable {
    enum Phase: UInt8 {
        /// Being handed to the dispatcher beneath.
        case dispatching
        /// In the registry, waiting to run.
        case live
        /// Its closure was taken to run.
        case ran
        /// Cancelled before it ran.
        case cancelled
    }

    private let registry: ScopeRegistry
    private let awaiter: (any TaskAwaiter)?
    private let countsAsBackground: Bool
    // Guarded by the registry's lock (so exclusivity is not checked again at run time).
    @exclusivity(unchecked) private var phase = Phase.dispatching
    @exclusivity(unchecked) private var work: DispatchedTask.Work?
    // Once `phase` is `.cancelled`, only the cancelling call reads these (and releases them).
    @exclusivity(unchecked) private var inner: TaskHandle?

    init(_ task: DispatchedTask, registry: ScopeRegistry) {
        self.registry = registry
        // The awaitable call this scope is forwarding, if the task is its: the scope ends that await itself when
        // it cancels the task.
        self.awaiter =
            task.awaitIdentity == 0
            ? nil : TaskTracking.dispatchingCall.flatMap { $0.identity == task.awaitIdentity ? $0.awaiter : nil }
        self.work = task.work
        self.countsAsBackground = task.context == .background && !task.neverRuns
        if self.countsAsBackground { registry.tracker.taskAccepted() }
    }

    /// The closure to hand to the dispatcher beneath in place of the task's own.
    var forwardedWork: DispatchedTask.Work {
        switch self.work {
        case .foreground: .foreground { self.runOnMainActor() }
        default: .background { self.run() }
        }
    }

    /// The dispatcher beneath accepted the task: keeps its handle in the registry, or, if the scope was cancelled
    /// meanwhile, cancels it.
    func accepted(_ inner: consuming TaskHandle) {
        var handle: TaskHandle? = consume inner  // moved into the entry, not copied
        let cancelled = self.registry.state.withLock { state -> Bool in
            guard self.phase == .dispatching else { return false }
            if state.isCancelled {
                self.phase = .cancelled
                return true
            }
            self.phase = .live
            self.inner = handle.take()
            state.insert(self)
            return false
        }
        if cancelled {
            handle?.cancel()
            self.scopeCancelled()
        }
    }

    /// Takes the closure to run, unless the entry or its scope was cancelled.
    private func takeWork() -> DispatchedTask.Work? {
        let (work, cancelledMeanwhile) = self.registry.state.withLock { state -> (DispatchedTask.Work?, Bool) in
            switch self.phase {
            case .ran, .cancelled:
                return (nil, false)
            case .dispatching where state.isCancelled:
                self.phase = .cancelled
                return (nil, true)
            case .dispatching, .live:
                self.phase = .ran
                self.inner = nil
                state.remove(self)
                return (self.work.take(), false)
            }
        }
        if cancelledMeanwhile { self.scopeCancelled() }
        return work
    }

    private func run() {
        guard case .background(let work)? = self.takeWork() else { return }
        work()
        if self.countsAsBackground { self.registry.tracker.taskEnded() }
    }

    @MainActor private func runOnMainActor() {
        guard case .foreground(let work)? = self.takeWork() else { return }
        work()
    }

    override func endedByScope() {
        self.phase = .cancelled
    }

    /// Cancels the task beneath, stops counting it, and ends an await on it with `CancellationError`.
    override func scopeCancelled() {
        self.inner.take()?.cancel()
        self.end(self.work.take(), failingTheAwait: true)
    }

    private func end(_ work: consuming DispatchedTask.Work?, failingTheAwait: Bool) {
        if self.countsAsBackground { self.registry.tracker.taskEnded() }
        guard let work else { return }
        if failingTheAwait, let awaiter = self.awaiter, awaiter.mayFail {
            awaiter.claimFailure()
            awaiter.fail(with: CancellationError(), releasing: work)
        }
    }

    func cancelTask() -> Bool {
        guard let inner = self.registry.state.withLock({ _ in self.phase == .live ? self.inner : nil }),
            inner.cancel()
        else { return false }
        let work = self.registry.state.withLock { state -> DispatchedTask.Work?? in
            guard self.phase == .live else { return nil }
            self.phase = .cancelled
            self.inner = nil
            state.remove(self)
            return .some(self.work.take())
        }
        guard let work else { return true }
        self.end(work, failingTheAwait: false)
        return true
    }

    var isTaskCancelled: Bool {
        self.registry.state.withLock { _ in self.phase == .cancelled }
    }
}

/// A Swift task started through a scope: cancelled with the scope, forgotten when it ends.
final class StartedTaskEntry<Success: Sendable>: ScopeEntry, @unchecked Sendable {
    private let task: Task<Success, any Error>

    init(_ task: Task<Success, any Error>) {
        self.task = task
    }

    override func scopeCancelled() {
        self.task.cancel()
    }
}
