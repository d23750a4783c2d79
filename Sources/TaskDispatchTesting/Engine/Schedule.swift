import Dispatch
import TaskDispatch

/// Everything a ``ManualDispatcher`` knows, as one single-threaded value. ``Storage`` locks around it: each event is
/// one mutating call that returns an ``Action`` to perform outside the lock; the engine's tests drive it unthreaded.
struct Schedule: Sendable {
    /// Which due tasks a step may choose from: those of one context, or (`nil`, `any`) of either.
    typealias Scope = TaskContext?

    /// The virtual time, in nanoseconds since the dispatcher was created; at most ``TaskKey/latestTime``.
    var now: Int64 = 0
    private(set) var nextSequence: UInt64 = 1

    var foreground = RingBuffer<ScheduledTask>()
    /// Due background tasks in dispatch order (one queue) or priority order (one queue per priority, lowest
    /// first); empty in random order, where ``pool`` holds them.
    var background: [RingBuffer<ScheduledTask>] = []
    var pool = RandomPool()
    var delayed = DelayHeap()
    var callSites = CallSiteTable()

    var dueForeground = 0
    var dueBackground = 0
    var waitingForeground = 0
    var waitingBackground = 0
    /// References to cancelled tasks still held by a queue or the heap.
    var staleEntries = 0

    var history = RingBuffer<RunRecord>()
    let historyLimit: Int
    private(set) var order = ManualDispatcher.Order.dispatch
    var random = SplitMix64(seed: 0)

    var mode: ManualDispatcher.Mode
    var autoDrain: Bool { self.mode != .manual }
    /// The most tasks a drain may run beyond those pending when it starts, and the most clock jumps auto-advance
    /// makes between two calls of the test.
    let runawayLimit: Int
    /// Clock jumps auto-advance made since the test last called a run method, `value(of:)` or `verifyIdle()`.
    var autoAdvanceJumps = 0
    var claim: RunClaim?
    /// The `verifyIdle()` calls waiting for the task another thread is running to end (``endExecution()``).
    var idleChecks: [DispatchSemaphore] = []
    /// Called as a `verifyIdle()` call begins to wait in ``idleChecks``; a seam for the package's own tests.
    var idleCheckObserver: (@Sendable () -> Void)?
    /// Failures found while no call of the test's could throw them (a runaway auto-drain, a finished tracked task's
    /// uncounted tasks), oldest first: each is taken once, by the next run method, wait, `value(of:)`, `verifyIdle()`
    /// or the release report (``takeDeferredFailure(by:)``).
    var deferredFailures: [Failure] = []
    /// The awaits from outside the tracked tasks whose task the wait limit cancelled, reported again later.
    var cancelledAwaits: [String] = []
    /// Tasks suspended in an async step or wait (`ManualDispatcher+Waiting.swift`); a dispatch wakes them.
    var waiters = DispatchWaiters<WaitResumer>()
    /// The Swift tasks started with `startTask` (`ManualDispatcher+Tasks.swift`) and their unclaimed errors.
    var tracked = TrackedTasks()
    /// The async drains suspended until their tracked tasks settle (`ManualDispatcher+Settling.swift`).
    var waitingSettles = WaitingSettles()
    /// The waiters of the test's `value(of:)` whose untracked task ended while they were not registered.
    var untrackedTasksEnded: Set<DispatchWaiters<WaitResumer>.ID> = []
    /// Who may move the clock in auto-advance: the test, or a tracked task while the test waits (`ClockHold.swift`).
    var clockHold = ClockHold()
    /// Ticks the test awaits itself (`for await` over `ticks(every:)`): auto-advance jumps to them as to its sleeps.
    var untrackedAwaitedTicks: [ScheduledTask] = []
    /// The ``ManualDispatcherRegistry/Registration/id`` of its dispatcher, if registered: its errors carry it, so the
    /// registry tells one dispatcher's leftover from another's with the same listing.
    var registration: UInt64?

    init(
        order: ManualDispatcher.Order,
        mode: ManualDispatcher.Mode = .manual,
        runawayLimit: Int = ManualDispatcher.defaultRunawayLimit,
        historyLimit: Int
    ) {
        self.mode = mode
        self.runawayLimit = Swift.max(1, runawayLimit)
        self.historyLimit = Swift.max(0, historyLimit)
        self.setOrder(order)
    }

    var pendingCount: Int {
        self.dueForeground + self.dueBackground + self.waitingForeground + self.waitingBackground
    }

    var hasDueTask: Bool { self.dueForeground + self.dueBackground > 0 }

    func pendingCount(in context: TaskContext) -> Int {
        context == .foreground
            ? self.dueForeground + self.waitingForeground : self.dueBackground + self.waitingBackground
    }

    // MARK: - Accepting and cancelling

    /// Takes `task` in: due at once (O(1) amortized), or into the delay heap (O(log n)) until the clock reaches it.
    mutating func accept(_ task: DispatchedTask) -> ScheduledTask {
        self.accept(task, dueAt: self.dueTime(of: task))
    }

    /// Takes in `task`, forwarded through `scope` (see `ScopeCarrying`).
    mutating func accept(_ task: DispatchedTask, joining scope: borrowing ScopeRegistry, countingBackground: Bool)
        -> ScopedTask
    {
        let scheduled = unsafeDowncast(
            self.accept(task, dueAt: self.dueTime(of: task)) { ScopedTask($0, key: $1, callSite: $2, state: $3) },
            to: ScopedTask.self)
        scheduled.join(scope, countingBackground: countingBackground)
        return scheduled
    }

    /// When `task` falls due on the clock.
    @inline(__always)
    private func dueTime(of task: DispatchedTask) -> Int64 {
        // Most tasks are not delayed: skip the 128-bit arithmetic of `Duration.components` for them.
        guard task.delay > .zero else { return self.now }
        let (sum, overflow) = self.now.addingReportingOverflow(task.delay.nanosecondsRoundedUp)
        return overflow ? TaskKey.never : sum
    }

    /// Takes `task` in to fall due at `due` (a clock sleep's deadline); past ``TaskKey/latestTime``, never. `make`
    /// builds its record.
    @inline(__always)
    mutating func accept(
        _ task: DispatchedTask,
        dueAt due: Int64,
        making make: (DispatchedTask, TaskKey, UInt32, ScheduledTask.State) -> ScheduledTask = ScheduledTask.make
    ) -> ScheduledTask {
        let waits = due > self.now
        let key = TaskKey(due: Swift.max(due, self.now), sequence: self.nextSequence)
        self.nextSequence += 1
        let callSite = self.callSites.index(of: task.callSite)
        let scheduled = make(task, key, callSite, waits ? .waiting : .due)
        guard waits else {
            self.enqueueDue(scheduled)
            return scheduled
        }
        self.delayed.insert(scheduled)
        if scheduled.context == .foreground { self.waitingForeground += 1 } else { self.waitingBackground += 1 }
        return scheduled
    }

    /// Cancels `task` if it is pending, and hands out its closure to release outside the lock (a captured object's
    /// `deinit` may dispatch again). O(1) amortized: the cancellations before a compaction pay for it.
    mutating func cancel(_ task: ScheduledTask) -> DispatchedTask.Work? {
        switch (task.state, task.context) {
        case (.due, .foreground): self.dueForeground -= 1
        case (.due, .background): self.dueBackground -= 1
        case (.waiting, .foreground): self.waitingForeground -= 1
        case (.waiting, .background): self.waitingBackground -= 1
        case (.started, _), (.cancelled, _): return nil
        }
        task.state = .cancelled
        if !self.clockHold.trackedWork.isEmpty { self.clockHold.trackedWork.remove(task.key.sequence) }
        let work = task.work.take()
        self.staleEntries += 1
        if self.staleEntries > self.pendingCount + 1_024 {
            self.compact()
        }
        return work
    }

    /// Drops every reference to a cancelled task from the queues and the heap, in O(n log n).
    mutating func compact() {
        let isStale = { (task: ScheduledTask) in task.state == .cancelled }
        self.foreground.removeAll(where: isStale)
        for index in self.background.indices { self.background[index].removeAll(where: isStale) }
        self.pool.removeAll(where: isStale)
        self.delayed.removeAll(where: isStale)
        self.staleEntries = 0
    }

    @inline(__always)
    mutating func enqueueDue(_ task: ScheduledTask) {
        if task.context == .foreground {
            self.foreground.append(task)
            self.dueForeground += 1
            return
        }
        self.dueBackground += 1
        switch self.order {
        case .dispatch: self.background[0].append(task)
        case .priority: self.background[task.priority.rawValue].append(task)
        case .random: self.pool.append(task)
        }
    }

    /// The task the run in progress was executing has ended: the ``idleChecks`` waiting for that end are woken.
    @inline(__always)
    mutating func endExecution() {
        self.claim?.executing = nil
        guard !self.idleChecks.isEmpty else { return }
        for check in self.idleChecks { check.signal() }
        self.idleChecks.removeAll()
    }

    // MARK: - Order

    /// Switches to `order`: the due background tasks move into its queues, and the generator restarts from its seed.
    mutating func setOrder(_ order: ManualDispatcher.Order) {
        let due = (self.background.joined() + self.pool.tasks).filter(\.isPending).sorted { $0.key < $1.key }
        self.pool = RandomPool()
        self.order = order
        self.random = SplitMix64(seed: order.seed ?? 0)
        self.background = Self.backgroundQueues(for: order)
        self.dueBackground -= due.count
        for task in due { self.enqueueDue(task) }
        self.compact()
    }

    static func backgroundQueues(for order: ManualDispatcher.Order) -> [RingBuffer<ScheduledTask>] {
        switch order {
        case .dispatch: [RingBuffer()]
        case .priority: Array(repeating: RingBuffer(), count: BackgroundPriority.allCases.count)
        case .random: []
        }
    }
}

struct RunRecord: Sendable {
    var task: ScheduledTask
    var start: Int64
}

extension ManualDispatcher.Order {
    var seed: UInt64? { if case .random(let seed) = self { seed } else { nil } }
}

extension Schedule.Scope {
    /// Due tasks of either context.
    static var any: Self { nil }
}
