import Dispatch
import TaskDispatch

extension Schedule {
    /// The events that need no answer but an ``Action``: the tracked tasks' steps, settings and the package's hooks.
    enum Event {
        /// The `Task` of `scope` exists, known by `key`: a body held on its creator's thread may go on.
        case registered(TrackedTaskKey, TrackedTaskScope)
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
        case runEnded
        /// The task the test's `value(of:)`, waiter `id`, awaits and the dispatcher did not start ended.
        case untrackedTaskEnded(DispatchWaiters<WaitResumer>.ID)
        case waitCancelled(DispatchWaiters<WaitResumer>.ID)
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

    /// Handles `event`, from a caller on `thread`, which drains if a change to the tracked tasks lets auto-advance on.
    mutating func handle(_ event: Event, thread: UInt) -> Action {
        var effects = Effects()
        switch event {
        case .registered(let key, let scope):
            self.tracked.register(key, id: scope.id)
            if let gate = scope.releaseFromCaller() { effects.setRare { $0.gate = gate } }
        case .parked(let scope, let continuation, let task):
            let (outcome, observer) = scope.park(continuation, task: task, in: &self)
            if let outcome { effects.setRare { $0.gate = (continuation, outcome) } }
            if let observer { effects.setRare { $0.observe = observer } }
        case .startCancelled(let scope):
            let (released, waiting) = scope.cancelStart(in: &self)
            effects.setRare {
                $0.released = released
                $0.gate = waiting.map { ($0, .failure(CancellationError())) }
            }
        case .sleptWithoutSuspending(let id, let deadline, let cancelled):
            self.tracked.returnedAtOnce(id, .sleptWithoutSuspending(until: deadline, cancelled: cancelled))
        case .runEnded:
            return self.endRun(movingClockTo: nil)
        case .untrackedTaskEnded(let id):
            if let resumer = self.waiters.remove(id) {
                effects.woken = [resumer]
            } else {
                self.untrackedTasksEnded.insert(id)  // before the waiter registered, or after it gave up
            }
        case .waitCancelled(let id):
            effects.setRare { $0.ended = self.waiters.remove(id).map { ([$0], .cancelled) } }
        case .waitTimerFired(let deadline):
            let (expired, next) = self.waiters.timerFired(for: deadline, now: .now())
            effects.setRare { $0.ended = (expired, .timedOut) }
            effects.arm = next
        case .awaitBoundPassed(let task, let awaiting, let what, let limit):
            // Unless the task ran or was cancelled, or the await already failed: cancel it and fail the await.
            let delayed = task.key.due > self.now
            guard awaiting.mayFail, let work = self.cancel(task) else { break }
            awaiting.claimFailure()  // in this critical section: a later timer of the await sees it
            self.cancelledAwaits.append(what)
            let failure = self.failure(.awaitNotRun(what: what, limit: limit, mode: self.mode, delayed: delayed))
            effects.setRare { $0.failedAwait = (awaiting, failure, work) }
        case .jobEnqueued(let id):
            self.tracked.jobEnqueued(id)
        case .claimed(let key, false):
            self.tracked.unclaim(key)
        case .untrackedValueWait(begins: false):
            self.clockHold.untrackedValueWaits -= 1
            if self.clockHold.untrackedValueWaits == 0 { self.untrackedTasksEnded.removeAll() }
        case .untrackedValueWait(begins: true):
            self.clockHold.untrackedValueWaits += 1
            self.clockHold.endHold()
            return self.autoAdvance(effects, thread: thread)
        case .drainEnded:
            self.tracked.drainEnded()
        case .order(let order):
            self.setOrder(order)
        case .mode(let mode, let byTest):
            self.mode = mode
            // The test's switch lets the clock reach every task pending now, once everything has settled.
            if mode == .autoAdvance, byTest {
                for task in self.delayed.elements.map(\.task) where task.isPending {
                    self.clockHold.allowJumps(to: task)
                }
            }
            return self.claimForAutoDrain(thread: thread) ? .drain(effects) : .none
        case .clockHoldTimer(let setTimer?):
            self.clockHold.setTimer = setTimer
        case .clockHoldTimer(nil):
            self.clockHold.isReleased = true  // a zero wait limit: a hold would end at once
        case .observeWaiterRegistrations(let observer):
            self.waiters.registrationObserver = observer
        case .observeStartGateParking(let observer):
            self.tracked.gateParkingObserver = observer
        case .observeIdleCheckWaits(let observer):
            self.idleCheckObserver = observer
        case .prefersTaskExecutor(let prefers):
            self.tracked.prefersTaskExecutor = prefers
        // The changes to the tracked tasks that can end waits and let auto-advance move the clock:
        case .startRan(let scope):
            scope.startRan(in: &self)
            return self.trackedTasksChanged(effects, thread: thread)
        case .finished(let id, let error):
            self.tracked.finish(id, error: error)
            return self.trackedTasksChanged(effects, thread: thread)
        case .waitEnded(let wait, let cancelled):
            wait.ended(cancelled: cancelled, in: &self)
            return self.trackedTasksChanged(effects, thread: thread)
        case .jobRan(let id):
            self.tracked.jobRan(id)
            return self.trackedTasksChanged(effects, thread: thread)
        case .claimed(let key, true):
            self.tracked.claim(key)
            return self.trackedTasksChanged(effects, thread: thread)
        case .valueAwaitEnded(let caller, let awaited):
            self.tracked.endAwaiting(caller, awaited)
            return self.trackedTasksChanged(effects, thread: thread)
        case .autoAdvanceRetried:
            return self.trackedTasksChanged(effects, thread: thread)
        }
        return .proceed(effects)
    }

    /// After a change to the tracked tasks: the waiters it woke (before any jump), and the drain the caller claims.
    mutating func trackedTasksChanged(_ effects: Effects, thread: UInt) -> Action {
        var effects = effects
        effects.woken = self.wokenWaiters()
        return self.autoAdvance(effects, thread: thread)
    }

    /// In auto-advance, the drain the caller, on `thread`, claims with `effects`; otherwise just `effects`.
    mutating func autoAdvance(_ effects: Effects, thread: UInt) -> Action {
        self.mode == .autoAdvance && self.claimForAutoDrain(thread: thread) ? .drain(effects) : .proceed(effects)
    }
}
