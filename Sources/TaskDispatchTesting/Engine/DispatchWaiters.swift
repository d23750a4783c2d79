package import Dispatch
package import TaskDispatch

/// The tasks suspended in a ``ManualDispatcher`` wait, with their conditions: a dispatch checks them in the section
/// that records its task, and a waiter checks and registers in one, so none is missed. O(w) each: waits are few.
package struct DispatchWaiters<Resumer: Sendable>: Sendable {
    package struct ID: Hashable, Sendable {
        let rawValue: UInt64
    }

    /// What a waiter waits for, checked against the dispatcher's ``Counts``.
    package enum Condition: Sendable, Hashable {
        /// A task due now in `context` (`nil`: in either context), or a failure left for the next call.
        case dueTask(TaskContext?)
        /// At least `count` pending tasks, due or delayed, in `context` (`nil`: in both together), or a failure left
        /// for the next call.
        case pendingTasks(atLeast: Int, in: TaskContext?)
        /// A due task, or every tracked task settled: what an async drain waits for.
        case dueTaskOrSettled
        /// Every cancelled tracked task settled: what an async step waits for.
        case cancelledTasksSettled
        /// The tracked task with this identity has finished, or a failure was left for the next call (a runaway
        /// auto-advance stopped the clock): what `value(of:)` called from the test waits for.
        case trackedTaskFinished(UInt64)
        /// The cancelled tracked task with this identity has finished: what the registry's end-of-test check waits for.
        case cancelledTaskFinished(UInt64)
        /// No run holds the claim: what an async run method waits for while another thread runs tasks.
        case runReleased
        /// A task the dispatcher did not start ended (that event wakes it: see `Schedule.untrackedTasksEnded`), or a
        /// failure was left for the next call.
        case untrackedTaskEnded

        package var isTrackedTaskFinished: Bool {
            switch self {
            case .trackedTaskFinished, .cancelledTaskFinished: true
            default: false
            }
        }

        /// Whether the test, met here, has waited for the work of the tracked tasks woken so far: for their dispatch,
        /// their end, or their settling (see `TrackedTasks.awaitedWakeups`); not for cancelled tasks or the run.
        package var awaitsTrackedWork: Bool {
            switch self {
            case .dueTask, .pendingTasks, .dueTaskOrSettled, .trackedTaskFinished, .cancelledTaskFinished: true
            case .cancelledTasksSettled, .runReleased, .untrackedTaskEnded: false
            }
        }

        /// Whether a failure left for the next call ends the wait: the test's waits for work, which auto-advance, stopped
        /// by that failure, might never bring (the registry's wait for cancelled tasks needs no clock).
        private var endsAtAFailureLeft: Bool {
            switch self {
            case .dueTask, .pendingTasks, .trackedTaskFinished, .untrackedTaskEnded: true
            case .dueTaskOrSettled, .cancelledTasksSettled, .cancelledTaskFinished, .runReleased: false
            }
        }

        /// Whether `counts` meets the condition; `isFinished` says whether a tracked task has finished.
        package func isMet(by counts: Counts, isFinished: (UInt64) -> Bool = { _ in false }) -> Bool {
            if counts.hasDeferredFailure && self.endsAtAFailureLeft { return true }
            return switch self {
            case .trackedTaskFinished(let id), .cancelledTaskFinished(let id): isFinished(id)
            case .dueTask(.foreground?): counts.dueForeground > 0
            case .dueTask(.background?): counts.dueBackground > 0
            case .dueTask(nil): counts.dueForeground + counts.dueBackground > 0
            case .pendingTasks(let count, let context): counts.pending(in: context) >= count
            case .dueTaskOrSettled: counts.dueForeground + counts.dueBackground > 0 || counts.unsettledTasks == 0
            case .cancelledTasksSettled: counts.unsettledCancelledTasks == 0
            case .runReleased: !counts.runClaimed
            case .untrackedTaskEnded: false
            }
        }
    }

    /// The numbers a condition is checked against: live tasks by context, due now or waiting for the clock.
    package struct Counts: Sendable, Hashable {
        package var dueForeground = 0
        package var dueBackground = 0
        package var delayedForeground = 0
        package var delayedBackground = 0
        /// Tracked tasks that are neither finished nor waiting on the dispatcher's own work.
        package var unsettledTasks = 0
        /// Those of ``unsettledTasks`` that were cancelled.
        package var unsettledCancelledTasks = 0
        /// Whether a failure waits for the next call: a runaway auto-advance's, which stopped the clock, or a late
        /// report of uncounted tasks, which stops auto-advance; the test's waits end to throw it.
        package var hasDeferredFailure = false
        /// Whether a run method or an auto-drain holds the run claim.
        package var runClaimed = false

        package func pending(in context: TaskContext?) -> Int {
            (context == .background ? 0 : self.dueForeground + self.delayedForeground)
                + (context == .foreground ? 0 : self.dueBackground + self.delayedBackground)
        }
    }

    private struct Waiter: Sendable {
        var id: ID
        var condition: Condition
        var resumer: Resumer
        var deadline: DispatchTime
    }

    private var waiters: [Waiter] = []
    private var lastID: UInt64 = 0

    /// The deadline of the one timer of every waiter, pending while any has a deadline, and no later than the earliest.
    package private(set) var timerDeadline: DispatchTime?

    /// Called outside the lock each time a waiter registered: the package's tests' seam to know a wait has begun.
    package var registrationObserver: (@Sendable () -> Void)?

    package init() {}

    package var isEmpty: Bool { self.waiters.isEmpty }

    package var count: Int { self.waiters.count }

    /// Whether every registered waiter is `id` (or none is registered).
    package func holdsOnly(_ id: ID) -> Bool { self.waiters.allSatisfy { $0.id == id } }

    package func contains(waitingFor condition: Condition) -> Bool {
        self.waiters.contains { $0.condition == condition }
    }

    /// Whether the test waits for a tracked task to finish, in `value(of:)` (a tracked task's awaits the task itself).
    package var waitsForATrackedTask: Bool { self.waiters.contains { $0.condition.isTrackedTaskFinished } }

    /// A new identity, for a waiter whose cancellation handler must know it before it registers.
    package mutating func makeID() -> ID {
        self.lastID += 1
        return ID(rawValue: self.lastID)
    }

    /// Registers a waiter for `condition`, just found unmet in this section, until `deadline`; returns the deadline to
    /// set the timer for, if no pending timer fires by then.
    @discardableResult
    package mutating func add(
        _ id: ID, waitingFor condition: Condition, resumer: Resumer, deadline: DispatchTime = .distantFuture
    ) -> DispatchTime? {
        precondition(!self.waiters.contains { $0.id == id }, "waiter \(id.rawValue) registered twice")
        self.waiters.append(Waiter(id: id, condition: condition, resumer: resumer, deadline: deadline))
        return self.setTimer(for: deadline)
    }

    /// The timer set for `deadline` fired at `now`: removes and returns the expired waiters, and the next deadline.
    package mutating func timerFired(
        for deadline: DispatchTime, now: DispatchTime
    ) -> (expired: [Resumer], next: DispatchTime?) {
        if self.timerDeadline == deadline { self.timerDeadline = nil }  // else an earlier timer replaced it
        let expired = self.removeAll { $0.deadline <= now }
        return (expired, self.setTimer(for: self.waiters.lazy.map(\.deadline).min() ?? .distantFuture))
    }

    /// Records a timer for `deadline` and returns it, unless it is never or a pending timer fires no later.
    private mutating func setTimer(for deadline: DispatchTime) -> DispatchTime? {
        guard deadline != .distantFuture, self.timerDeadline.map({ deadline < $0 }) ?? true else { return nil }
        self.timerDeadline = deadline
        return deadline
    }

    /// Removes waiter `id` and returns its resumer, or `nil` if it was resumed already.
    package mutating func remove(_ id: ID) -> Resumer? {
        self.waiters.firstIndex { $0.id == id }.map { self.waiters.remove(at: $0).resumer }
    }

    /// The dispatcher now holds `counts`: removes and returns the resumers of the waiters whose condition holds, and
    /// whether one of them awaits the tracked tasks' work (``Condition/awaitsTrackedWork``).
    package mutating func resumersMet(
        by counts: Counts, isFinished: (UInt64) -> Bool
    ) -> (resumers: [Resumer], awaitedTrackedWork: Bool) {
        var awaited = false
        let resumers = self.removeAll { waiter in
            guard waiter.condition.isMet(by: counts, isFinished: isFinished) else { return false }
            awaited = awaited || waiter.condition.awaitsTrackedWork
            return true
        }
        return (resumers, awaited)
    }

    /// Removes the waiters that `isDone` picks and returns their resumers, oldest first.
    private mutating func removeAll(where isDone: (Waiter) -> Bool) -> [Resumer] {
        let removed = self.waiters.filter(isDone).map(\.resumer)
        if !removed.isEmpty { self.waiters.removeAll(where: isDone) }
        return removed
    }
}
