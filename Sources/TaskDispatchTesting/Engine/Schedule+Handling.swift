import Dispatch
import TaskDispatch

extension Schedule {
    /// The events that need no answer but an ``Action``: a tracked task's registration and start gate, the ends of waits
    /// and runs, and the mode (the changes that can settle a tracked task go through ``trackedTasksChanged(thread:by:)``).
    enum Event {
        /// The `Task` of `scope` exists, known by `key`: a body held on its creator's thread may go on.
        case registered(TrackedTaskKey, TrackedTaskScope)
        /// The body of `scope`, the current task `task`, reached its start gate.
        case parked(TrackedTaskScope, TrackedTaskScope.StartContinuation, task: UInt)
        /// The task of `scope` was cancelled: its start too, if it has not run.
        case startCancelled(TrackedTaskScope)
        /// The test's `value(of:)` of a task the dispatcher did not start begins, or (`false`) ends.
        case untrackedValueWait(begins: Bool)
        case runEnded
        /// The task the test's `value(of:)`, waiter `id`, awaits and the dispatcher did not start ended.
        case untrackedTaskEnded(DispatchWaiters<WaitResumer>.ID)
        case waitCancelled(DispatchWaiters<WaitResumer>.ID)
        case waitTimerFired(DispatchTime)
        /// The real-time bound of an await by code outside the tracked tasks passed (see `Storage.bound`).
        case awaitBoundPassed(ScheduledTask, any TaskAwaiter, what: String, limit: Duration)
        /// The mode set by the test (`byTest`) or by a tracked task.
        case mode(ManualDispatcher.Mode, byTest: Bool)
    }

    /// Handles `event`, from a caller on `thread`; a new mode, or the test beginning to await a task the dispatcher did
    /// not start, may claim an auto-drain.
    mutating func handle(_ event: Event, thread: UInt) -> Action {
        var effects = Effects()
        switch event {
        case .registered(let key, let scope):
            self.tracked.register(key, id: scope.id)
            if let gate = scope.releaseFromCaller() { effects.setRare { $0.gate = gate } }
        case .parked(let scope, let continuation, let task):
            let outcome = scope.park(continuation, task: task, in: &self)
            if let outcome { effects.setRare { $0.gate = (continuation, outcome) } }
            if outcome == nil, let hook = self.tracked.gateParkingObserver { effects.setRare { $0.observe = hook } }
        case .startCancelled(let scope):
            let (released, waiting) = scope.cancelStart(in: &self)
            effects.setRare {
                $0.released = released
                $0.gate = waiting.map { ($0, .failure(CancellationError())) }
            }
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
        case .untrackedValueWait(begins: false):
            self.clockHold.untrackedValueWaits -= 1
            if self.clockHold.untrackedValueWaits == 0 { self.untrackedTasksEnded.removeAll() }
        case .untrackedValueWait(begins: true):
            self.clockHold.untrackedValueWaits += 1
            self.clockHold.endHold()
            return self.autoAdvance(effects, thread: thread)
        case .mode(let mode, let byTest):
            self.mode = mode
            // The test's switch lets the clock reach every task pending now, once everything has settled.
            if mode == .autoAdvance, byTest {
                for task in self.delayed.elements.map(\.task) where task.isPending {
                    self.clockHold.allowJumps(to: task)
                }
            }
            return self.claimForAutoDrain(thread: thread) ? .drain(effects) : .none
        }
        return .proceed(effects)
    }

    /// Makes `change` to the tracked tasks (a start ran, a job ran, a wait or a task ended, an error was claimed), the
    /// event that can end waits and let auto-advance move the clock: the waiters it woke (before any jump), and the
    /// drain the caller, on `thread`, claims.
    mutating func trackedTasksChanged(thread: UInt, by change: (inout Schedule) -> Void = { _ in }) -> Action {
        change(&self)
        return self.autoAdvance(Effects(woken: self.wokenWaiters()), thread: thread)
    }

    /// In auto-advance, the drain the caller, on `thread`, claims with `effects`; otherwise just `effects`.
    mutating func autoAdvance(_ effects: Effects, thread: UInt) -> Action {
        self.mode == .autoAdvance && self.claimForAutoDrain(thread: thread) ? .drain(effects) : .proceed(effects)
    }
}
