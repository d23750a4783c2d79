import Dispatch
import TaskDispatch

extension Schedule {
    /// The events that need no answer but an ``Action``: the tracked tasks' steps, settings and the package's hooks.
    enum Event {
        /// The `Task` of `scope` exists, known by `key`: a body held on its creator's thread may go on.
        case registered(TrackedTaskKey, TrackedTaskScope)
        /// The start task of `scope` ran.
        case startRan(TrackedTaskScope)
        /// The body of `scope`, the current task `task`, reached its start gate.
        case parked(TrackedTaskScope, TrackedTaskScope.StartContinuation, task: UInt)
        /// The task of `scope` was cancelled: its start too, if it has not run.
        case startCancelled(TrackedTaskScope)
        case finished(UInt64, error: (any Error)?)
        case waitEnded(OwnedWait, cancelled: Bool)
        case sleptWithoutSuspending(UInt64, until: String, cancelled: Bool)
        case jobEnqueued(UInt64)
        case jobRan(UInt64)
        /// The test claims the error of the task `key`, or (`false`) gives the claim back.
        case claimed(TrackedTaskKey, Bool)
        /// Tracked task `caller`'s await of tracked task `awaited` through `value(of:)` ended.
        case valueAwaitEnded(caller: UInt64, awaited: UInt64)
        /// The test's `value(of:)` of a task the dispatcher did not start begins, or (`false`) ends.
        case untrackedValueWait(begins: Bool)
        /// An async drain stopped waiting without moving the clock: auto-advance may now make a jump it held.
        case autoAdvanceRetried
        /// An async drain ended: the errors tracked tasks threw until now are the next call's to report.
        case drainEnded
        /// A run released its claim, moving the clock to the time first if given (see `endRun(movingClockTo:)`).
        case runEnded(movingClockTo: Int64?)
        /// The task the test's `value(of:)`, waiter `id`, awaits and the dispatcher did not start ended.
        case untrackedTaskEnded(DispatchWaiters<WaitResumer>.ID)
        /// Waiter `id`'s task was cancelled.
        case waitCancelled(DispatchWaiters<WaitResumer>.ID)
        /// The waiters' timer set for `deadline` fired.
        case waitTimerFired(DispatchTime)
        /// The real-time bound of an await by code outside the tracked tasks passed (see `Storage.bound`).
        case awaitBoundPassed(ScheduledTask, any TaskAwaiter, what: String, limit: Duration)
        case order(ManualDispatcher.Order)
        /// The mode set by the test (`byTest`) or by a tracked task.
        case mode(ManualDispatcher.Mode, byTest: Bool)
        /// Auto-advance's hold of the clock arms its timers with this closure, or (`nil`) holds nothing.
        case clockHoldTimer((@Sendable (_ generation: UInt64) -> Void)?)
        case observeWaiterRegistrations(@Sendable () -> Void)
        case observeStartGateParking(@Sendable () -> Void)
        case observeIdleCheckWaits(@Sendable () -> Void)
        case prefersTaskExecutor(Bool)
    }

    /// Handles `event`, from a caller on `thread`. A change to the tracked tasks can end waits (a task that settles
    /// ends an async drain's), and in auto-advance let the clock move while the test waits: the caller then drains.
    mutating func handle(_ event: Event, thread: UInt) -> Action {
        var effects = Effects()
        switch event {
        case .registered(let key, let scope):
            self.tracked.register(key, id: scope.id)
            effects.gate = scope.releaseFromCaller()
            return .proceed(effects)
        case .parked(let scope, let continuation, let task):
            let (outcome, observer) = scope.park(continuation, task: task, in: &self)
            effects.gate = outcome.map { (continuation, $0) }
            effects.observe = observer
            return .proceed(effects)
        case .startCancelled(let scope):
            let (released, waiting) = scope.cancelStart(in: &self)
            effects.released = released
            effects.gate = waiting.map { ($0, .failure(CancellationError())) }
            return .proceed(effects)
        case .sleptWithoutSuspending(let id, let deadline, let cancelled):
            self.tracked.sleptWithoutSuspending(id, until: deadline, cancelled: cancelled)
            return .none
        case .runEnded(let time):
            return self.endRun(movingClockTo: time)
        case .untrackedTaskEnded(let id):
            if let resumer = self.waiters.remove(id) {
                effects.woken = [resumer]
            } else {
                self.untrackedTasksEnded.insert(id)  // before the waiter registered, or after it gave up
            }
            return .proceed(effects)
        case .waitCancelled(let id):
            effects.ended = self.waiters.remove(id).map { ([$0], .cancelled) }
            return .proceed(effects)
        case .waitTimerFired(let deadline):
            let (expired, next) = self.waiters.timerFired(for: deadline, now: .now())
            effects.ended = (expired, .timedOut)
            effects.arm = next
            return .proceed(effects)
        case .awaitBoundPassed(let task, let awaiting, let what, let limit):
            effects.failedAwait = self.awaitBoundPassed(of: task, awaitedBy: awaiting, describedAs: what, limit: limit)
                .map { (awaiting, $0.failure, $0.work) }
            return .proceed(effects)
        case .jobEnqueued(let id):
            self.tracked.jobEnqueued(id)
            return .none
        case .claimed(let key, false):
            self.tracked.unclaim(key)
            return .none
        case .untrackedValueWait(begins: false):
            self.clockHold.untrackedValueWaits -= 1
            if self.clockHold.untrackedValueWaits == 0 { self.untrackedTasksEnded.removeAll() }
            return .none
        case .untrackedValueWait(begins: true):
            self.clockHold.untrackedValueWaits += 1
            self.clockHold.endHold()
            return self.mode == .autoAdvance && self.claimForAutoDrain(thread: thread) ? .drain(effects) : .none
        case .drainEnded:
            self.tracked.drainEnded()
            return .none
        case .order(let order):
            self.setOrder(order)
            return .none
        case .mode(let mode, let byTest):
            self.mode = mode
            // The test's switch lets the clock reach every task pending now, once everything has settled.
            if mode == .autoAdvance, byTest {
                for task in self.waitingTasks { self.clockHold.allowJumps(to: task) }
            }
            return self.claimForAutoDrain(thread: thread) ? .drain(effects) : .none
        case .clockHoldTimer(let setTimer?):
            self.clockHold.setTimer = setTimer
            return .none
        case .clockHoldTimer(nil):
            self.clockHold.releaseHolds()
            return .none
        case .observeWaiterRegistrations(let observer):
            self.waiters.registrationObserver = observer
            return .none
        case .observeStartGateParking(let observer):
            self.tracked.gateParkingObserver = observer
            return .none
        case .observeIdleCheckWaits(let observer):
            self.idleCheckObserver = observer
            return .none
        case .prefersTaskExecutor(let prefers):
            self.tracked.prefersTaskExecutor = prefers
            return .none
        // The changes to the tracked tasks that can end waits and let auto-advance move the clock:
        case .startRan(let scope):
            effects.gate = scope.startRan(in: &self).map { ($0, .success(())) }
        case .finished(let id, let error):
            self.tracked.finish(id, error: error)
        case .waitEnded(let wait, let cancelled):
            wait.ended(cancelled: cancelled, in: &self)
        case .jobRan(let id):
            self.tracked.jobRan(id)
        case .claimed(let key, true):
            self.tracked.claim(key)
        case .valueAwaitEnded(let caller, let awaited):
            self.tracked.endAwaiting(caller, awaited)
        case .autoAdvanceRetried:
            break
        }
        return self.trackedTasksChanged(effects, thread: thread)
    }

    /// After a change to the tracked tasks: the waiters it woke, and in auto-advance the drain the caller, on
    /// `thread`, claims (waits the change ends are ended first, so the clock does not run past the point where the
    /// test resumes).
    mutating func trackedTasksChanged(_ effects: Effects, thread: UInt) -> Action {
        var effects = effects
        effects.woken = self.wokenWaiters()
        return self.mode == .autoAdvance && self.claimForAutoDrain(thread: thread) ? .drain(effects) : .proceed(effects)
    }
}
