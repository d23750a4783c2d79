import TaskDispatch

extension ManualDispatcher {
    /// The dispatcher's virtual clock: `now` is ``now``, and a sleep is a delayed task that wakes when
    /// ``advance(by:)`` reaches its deadline.
    ///
    /// Code that takes a dispatcher sleeps on its ``TaskDispatcher/clock`` (the real `ContinuousClock` in
    /// production); with a `ManualDispatcher` that sleep waits for the test to move the clock, and takes no real time.
    /// A sleep is a background task labeled `clock sleep until <deadline>` (with the task's label inside a tracked
    /// task), listed, reported and woken at its due time like any other. Its deadline is fixed when it
    /// starts, its tolerance ignored; a sleep from outside the tracked tasks is bounded by
    /// ``ManualDispatcher/waitLimit``. See <doc:TestingWithVirtualTime>.
    public struct Clock: _Concurrency.Clock {
        /// A point on the dispatcher's virtual timeline: its ``AnyDispatcherClock/Instant/offset`` is the time since
        /// the dispatcher's creation, what ``ManualDispatcher/now`` shows.
        public typealias Instant = AnyDispatcherClock.Instant

        /// The dispatcher whose timeline this clock reads.
        let dispatcher: ManualDispatcher

        /// The dispatcher's current virtual time.
        public var now: Instant {
            Instant(offset: self.dispatcher.now)
        }

        /// One nanosecond: the virtual clock's unit.
        public var minimumResolution: Duration {
            .nanoseconds(1)
        }

        /// Suspends until the dispatcher's clock reaches `deadline`, through a timer task on the dispatcher; a deadline
        /// already reached returns at once.
        ///
        /// - Parameters:
        ///   - deadline: The instant to wake at.
        ///   - tolerance: Ignored: the timer runs exactly at `deadline`.
        /// - Throws: `CancellationError` when the sleeping task is cancelled before its timer ran (the timer leaves the
        ///   dispatcher at once); ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/waitTimedOut(after:)``
        ///   when code outside the tracked tasks slept longer than ``ManualDispatcher/waitLimit`` of real time.
        public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
            let due = deadline.offset.nanosecondsRoundedUp
            let sleeper = TrackedTaskScope.current
            guard due > self.dispatcher.now.nanosecondsSaturated else {
                // Noted, so that a loop of such sleeps, which never settles, is named for what it does.
                if let sleeper {
                    let slept = TrackedTasks.Event.sleptWithoutSuspending(
                        until: formatTime(due), cancelled: Task.isCancelled)
                    sleeper.storage.update { $0.tracked.returnedAtOnce(sleeper.id, slept) }
                }
                return try Task.checkCancellation()
            }
            let deadline = "clock sleep until \(formatTime(due))"
            let label = sleeper?.label.map { "\($0): \(deadline)" } ?? deadline
            let what = "a sleep on the dispatcher's clock (\"\(label)\")"
            let wait = sleeper.map { OwnedWait(scope: $0, description: what) }
            let awaited = AwaitedDispatch<Void>(reporting: wait)
            // `Clock.sleep(until:tolerance:)` has no parameter for the caller's file and line: a sleep in a tracked task
            // is attributed to the task's start, any other to this line.
            let callSite = sleeper?.callSite ?? CallSite(fileID: #fileID, line: #line)
            let task = DispatchedTask(
                unbound: .background { awaited.finish(.success(())) }, label: label, callSite: callSite)
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    awaited.start(continuation) {
                        self.dispatcher.storage.record(wait, awaitedBy: awaited, describedAs: what) {
                            $0.accept(task, dueAt: due)
                        }
                    }
                }
            } onCancel: {
                awaited.cancel()
            }
        }
    }

    /// The virtual clock: its `now` is ``now``, and its sleeps wake when the test moves the clock (see ``Clock``).
    public var clock: Clock {
        Clock(dispatcher: self)
    }
}

extension ManualDispatcher.Clock: NanosecondReadingClock {
    /// Reads ``now`` in nanoseconds through the storage, without a `Duration`: what a repeating series reads each tick.
    package var nanosecondReader: @Sendable () -> Int64 {
        { [storage = self.dispatcher.storage] in storage.read { $0.now } }
    }
}

extension ManualDispatcher: SeriesForwarding {
    /// Dispatches a series' tick through the storage, so that a live series does not keep the dispatcher alive.
    package var seriesForward: @Sendable (DispatchedTask) -> TaskHandle {
        { [storage = self.storage] in storage.dispatch($0) }
    }

    /// Dispatches a series' tick due when `due` says for the clock's `now`, in one critical section of the storage.
    package var seriesForwardAtDue: @Sendable (DispatchedTask, (Int64) -> Int64) -> TaskHandle {
        { [storage = self.storage] task, due in storage.record(nil) { $0.accept(task, dueAt: due($0.now)) } }
    }
}
