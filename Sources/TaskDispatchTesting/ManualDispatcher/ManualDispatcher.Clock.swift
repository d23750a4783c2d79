import TaskDispatch

extension ManualDispatcher {
    /// The dispatcher's virtual clock: `now` is ``now``, and a sleep is a delayed task that wakes when
    /// ``advance(by:)`` reaches its deadline.
    ///
    /// Code that takes a dispatcher sleeps on its ``TaskDispatcher/clock`` (the real `ContinuousClock` in
    /// production); with a `ManualDispatcher` that sleep waits for the test to move the clock, and takes no
    /// real time. A debounce, tested in microseconds:
    ///
    /// ```swift
    /// @Test func searchesOnlyAfterTheTypingPauses() async throws {
    ///     let dispatcher = ManualDispatcher()
    ///     let search = SearchModel(dispatcher: dispatcher)     // sleeps 300 ms on dispatcher.clock
    ///
    ///     search.type("sw")
    ///     try await dispatcher.waitForPendingTasks(1)            // the sleep's timer
    ///     try await dispatcher.advance(by: .milliseconds(200))
    ///     search.type("swift")                                  // cancels the first sleep and its timer
    ///     try await dispatcher.waitForPendingTasks(1)
    ///     try await dispatcher.advance(by: .milliseconds(300))  // wakes the second sleep
    ///     try await search.currentSearch?.value
    ///     #expect(search.queries == ["swift"])
    /// }
    /// ```
    ///
    /// ## How a sleep works
    ///
    /// `sleep(until:tolerance:)` dispatches one background task labeled `clock sleep until <deadline>` that is due
    /// at the deadline, and suspends until it runs. So a sleeping task is pending work like any other: it shows
    /// in ``pendingTasks`` and ``pendingTaskCount``, ``verifyIdle()`` reports it, and the run methods wake it at its
    /// place in (due time, dispatch order), interleaved with delayed closures. Running the timer resumes the
    /// sleeping task; the code after its `sleep` then runs on that task's own executor, after the run method
    /// has moved on, so the test awaits the task (or a later dispatch) before checking what it did.
    ///
    /// **Where a sleep comes from.** A sleep made inside a task started with
    /// ``startTask(label:callSite:operation:)`` (or a child task of it) is attributed to that task: its timer is
    /// labeled with the task's label, as in `timer: clock sleep until 99 s`, and carries the task's start call
    /// site, so the listings and a runaway timer loop name the task and the line that started it. Any other
    /// sleep is labeled `clock sleep until 99 s` and its call site is inside this library
    /// (`TaskDispatchTesting/ManualDispatcher.Clock.swift`): `Clock.sleep(until:tolerance:)` takes no file and
    /// line, so the caller's own place cannot reach the dispatcher. Start the sleeping code with `startTask` to
    /// see where it comes from.
    ///
    /// - A deadline at or before ``now`` returns at once, without a timer, unless the task is cancelled.
    /// - The deadline is fixed when the sleep starts: moving the clock between the sleeper reading ``now`` and
    ///   the dispatch of its timer does not push it back.
    /// - The tolerance is ignored: the timer runs exactly at its deadline.
    ///
    /// **A sleep from outside the tracked tasks** (from the test itself, or a plain `Task`) is bounded by
    /// ``ManualDispatcher/waitLimit`` of real time: if the clock has not reached its deadline by then, its timer is
    /// cancelled and the sleep throws ``ManualDispatcherError/Kind/waitTimedOut(after:)`` (see <doc:Limits>). A
    /// sleep inside a tracked task is the async drains' business, and has no such bound.
    ///
    /// **Cancellation.** Cancelling a sleeping task cancels its timer, which leaves the dispatcher at once, and
    /// the sleep throws `CancellationError`. If the timer ran first, the sleep returns normally: the sleeping
    /// task is resumed exactly once either way. A sleep started by a task that is already cancelled throws
    /// `CancellationError` and dispatches nothing.
    public struct Clock: _Concurrency.Clock {
        /// A point on the dispatcher's virtual timeline: its ``AnyDispatcherClock/Instant/offset`` is the time since
        /// the dispatcher's creation, what ``ManualDispatcher/now`` shows.
        ///
        /// The same type as `AnyDispatcherClock.Instant`, an offset from the clock's origin; it saturates instead of
        /// trapping, and any instant past the clock's range (about 292 years) is one the clock never reaches.
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

        /// Suspends until the dispatcher's clock reaches `deadline`, through a timer task on the dispatcher.
        ///
        /// See ``ManualDispatcher/Clock`` for how the timer is dispatched, run and cancelled.
        ///
        /// - Parameters:
        ///   - deadline: The instant to wake at.
        ///   - tolerance: Ignored: the timer runs exactly at `deadline`.
        /// - Throws: `CancellationError` when the sleeping task is cancelled before its timer ran;
        ///   ``ManualDispatcherError`` of kind ``ManualDispatcherError/Kind/waitTimedOut(after:)`` when code outside
        ///   the tracked tasks slept longer than ``ManualDispatcher/waitLimit`` of real time.
        public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
            let due = deadline.offset.nanosecondsSaturated
            let sleeper = TrackedTaskScope.current
            guard due > self.dispatcher.now.nanosecondsSaturated else {
                // Noted, so that a loop of such sleeps, which never settles, is named for what it does.
                if let sleeper {
                    let deadline = formatTime(due)
                    let cancelled = Task.isCancelled
                    sleeper.storage.send(.sleptWithoutSuspending(sleeper.id, until: deadline, cancelled: cancelled))
                }
                try Task.checkCancellation()
                return
            }
            let dispatcher = self.dispatcher
            let deadline = "clock sleep until \(formatTime(due > TaskKey.latestTime ? TaskKey.never : due))"
            let label = sleeper?.label.map { "\($0): \(deadline)" } ?? deadline
            let wait = sleeper?.makeWait(on: "a sleep on the dispatcher's clock (\"\(label)\")")
            let awaited = AwaitedDispatch<Void>(reporting: wait)
            let task = DispatchedTask(
                unbound: .background { awaited.finish(.success(())) },
                label: label,
                // `Clock.sleep(until:tolerance:)` has no parameter for the caller's file and line: a sleep in a
                // tracked task is attributed to the task's start, any other to this line.
                callSite: sleeper?.callSite ?? CallSite(fileID: #fileID, line: #line)
            )
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    awaited.start(continuation) {
                        dispatcher.storage.dispatch(task, dueAt: due, waitedOnBy: wait, awaitedBy: awaited)
                    }
                }
            } onCancel: {
                awaited.cancel()
            }
        }
    }

    /// The virtual clock: its `now` is ``now``, and its sleeps wake when the test moves the clock.
    ///
    /// Each access returns a new value reading the same timeline. See ``Clock`` for how sleeping works.
    public var clock: Clock {
        Clock(dispatcher: self)
    }
}
