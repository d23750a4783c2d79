import TaskDispatch

/// The schedule when something went wrong: taken under the lock, written out outside it (from `let` fields only).
struct Snapshot {
    /// How many pending tasks a snapshot lists, earliest first; the counts cover the rest.
    static let listingLimit = 50

    var now: Int64
    var pending: [ScheduledTask]
    var pendingCount: Int
    var dueForeground: Int
    var dueBackground: Int
    /// Pending foreground tasks, due or waiting for the clock.
    var pendingForeground: Int
    var recentRuns: [RunRecord]
    var callSites: [CallSite]
    var seed: UInt64?
    var registration: UInt64?
}

/// A misuse or a failed scenario: the facts its message needs, and the snapshot its listing comes from.
struct Failure {
    enum Misuse {
        case noTaskToRun(method: String, scope: Schedule.Scope)
        case reentrantRun(method: String, running: String, culprit: ExecutingTask?)
        /// `executing`: the task the other run executes, if any.
        case concurrentRun(method: String, running: String, executing: ExecutingTask?)
        /// An async run method waited `limit` for another thread's run to end, and it did not.
        case runNotReleased(method: String, running: String, limit: Duration, executing: ExecutingTask?)
        case clockMovedBackwards(method: String, from: Int64, to: Int64)
        case runawayTasks(method: String, maxTasks: Int, ran: Int)
        /// An auto-drain ran `ran` tasks in one go, or (`jumps` not `nil`) auto-advance moved the clock that often.
        case autoDrainRunaway(ran: Int, jumps: Int?)
        /// A drain to idle, or auto-advance, would jump to `tick` of a live repeating series, and on for ever.
        case liveSeries(method: String, tick: ScheduledTask, limit: Int)
        /// `unfinished`: tracked tasks that have not finished either, often the ones whose sleeps are pending.
        case pendingTasks(unfinished: [TrackedTasks.UnsettledTask])
        /// `label`: `nil` for `run(until:)`. `unsettled`: tracked tasks still running, which may dispatch it later.
        /// `beforeTheClock`: it stopped before any move of the clock, for tracked tasks woken and not waited for.
        case conditionNotMet(
            method: String, label: String?, ran: Int, unsettled: [TrackedTasks.UnsettledTask], beforeTheClock: Bool)
        case dueTaskNotDispatched(method: String, scope: Schedule.Scope, limit: Duration)
        case pendingTasksNotReached(method: String, count: Int, context: TaskContext?, limit: Duration)
        case unobservedTaskErrors(method: String, errors: [TrackedTasks.UnobservedError])
        /// `limit`: the real time waited (`nil`: a synchronous drain). `since`: where the call moved the clock first.
        case tasksNotSettled(
            method: String, limit: Duration?, tasks: [TrackedTasks.UnsettledTask], since: Int64? = nil)
        case unfinishedTasks(tasks: [TrackedTasks.UnsettledTask])
        case clockMovedWhileUnsettled(method: String, tasks: [TrackedTasks.UnsettledTask])
        /// A synchronous drain woke tracked tasks (`tasks`: those not finished yet) and would move the clock on.
        case clockMovedAfterWaking(method: String, byThisCall: Bool, tasks: [TrackedTasks.UnsettledTask])
        /// A drain would rely on `task` being settled, but uncounted tasks inside it wait on the dispatcher.
        case uncountedTasks(method: String, task: TrackedTasks.TaskWithUncountedTasks)
        /// An await from outside the tracked tasks on `what` found it pending after `limit`, and cancelled it.
        case awaitNotRun(what: String, limit: Duration, mode: ManualDispatcher.Mode, delayed: Bool)
        /// `verifyIdle()` or the release found awaits that the wait limit `limit` ended (`whats`, as above).
        case awaitsCancelled(method: String, whats: [String], limit: Duration)
        /// `value(of:)` waited `limit` of real time for `task` in vain. `holding`: the unsettled tracked tasks (in
        /// auto-advance, they keep the clock where it is).
        case taskNotFinished(
            limit: Duration, task: TrackedTasks.UnsettledTask, mode: ManualDispatcher.Mode,
            holding: [TrackedTasks.UnsettledTask])
        /// `value(of:)`, given a task this dispatcher did not start, waited `limit` of real time for it in vain.
        case untrackedTaskNotFinished(limit: Duration)
        /// A run method was called from inside `task`, one of this dispatcher's tracked tasks.
        case runFromTrackedTask(method: String, task: String, isAsync: Bool)
        /// `verifyIdle()` found `task` still running inside `runner` (a run method, or auto-drain).
        case taskStillRunning(task: ExecutingTask, runner: String, caller: IdleCheckCaller)
    }

    var misuse: Misuse
    var snapshot: Snapshot
}

/// The task a run method is executing, as a message names it.
struct ExecutingTask {
    let sequence: UInt64
    let context: TaskContext
    /// Its record in the history, if the dispatcher keeps one.
    let run: RunRecord?
}

extension Schedule {
    /// The task the run in progress is executing, if any.
    var executingTask: ExecutingTask? {
        guard let claim = self.claim, let context = claim.executing else { return nil }
        let run = self.history.last.flatMap { $0.task.key.sequence == claim.executingSequence ? $0 : nil }
        return ExecutingTask(sequence: claim.executingSequence, context: context, run: run)
    }
}

/// Where `verifyIdle()` was called from, seen from a task that a run method is executing.
enum IdleCheckCaller {
    /// From inside that task: on the thread that runs it.
    case insideTheTask
    /// On the main actor, which that task, a foreground one, needs: it runs there, or waits for it.
    case onTheMainActorItNeeds
    /// From another thread, which waited `waited` for the task to end, or found another begun.
    case elsewhere(waited: Duration)
}

extension Schedule {
    /// A failure with a snapshot of the earliest pending tasks and the history, in O(n).
    func failure(_ misuse: Failure.Misuse) -> Failure {
        Failure(misuse: misuse, snapshot: self.snapshot())
    }

    func snapshot(recentRuns: Int = .max) -> Snapshot {
        // Taken under the lock at every thrown error: the earliest pending tasks in O(n), not a sort of them all.
        var earliest = EarliestTasks(limit: Snapshot.listingLimit)
        for queue in [self.foreground] + self.background { earliest.consider(sorted: queue) }
        for task in self.pool.tasks where task.isPending { earliest.insert(task) }
        for element in self.delayed.elements where element.task.isPending { earliest.insert(element.task) }
        return Snapshot(
            now: self.now,
            pending: earliest.tasks,
            pendingCount: self.pendingCount,
            dueForeground: self.dueForeground,
            dueBackground: self.dueBackground,
            pendingForeground: self.pendingCount(in: .foreground),
            recentRuns: Array(self.history.suffix(recentRuns)),
            callSites: self.callSites.sites,
            seed: self.order.seed,
            registration: self.registration
        )
    }

    /// Every pending task, in key order, in O(n log n).
    var allPendingTasks: [ScheduledTask] {
        let all =
            Array(self.foreground) + self.background.joined() + self.pool.tasks + self.delayed.elements.map(\.task)
        return all.filter(\.isPending).sorted { $0.key < $1.key }
    }
}

/// The `limit` earliest tasks seen, kept sorted: O(1) for a task later than all of them once full.
private struct EarliestTasks {
    let limit: Int
    private(set) var tasks: [ScheduledTask] = []

    mutating func insert(_ task: ScheduledTask) {
        guard self.tasks.count < self.limit || task.key < self.tasks[self.limit - 1].key else { return }
        self.tasks.insert(task, at: self.tasks.firstIndex { task.key < $0.key } ?? self.tasks.count)
        if self.tasks.count > self.limit { self.tasks.removeLast() }
    }

    /// Considers a queue already in key order: only its first `limit` pending tasks can be among the earliest.
    mutating func consider(sorted queue: RingBuffer<ScheduledTask>) {
        for task in queue.lazy.filter(\.isPending).prefix(self.limit) { self.insert(task) }
    }
}
