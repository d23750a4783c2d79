extension TaskDispatcher {
    /// Runs `work` on a background thread every `interval`, until the returned handle cancels the series.
    ///
    /// Each tick is a task dispatched with ``dispatch(_:)`` and timed on ``clock``: drift-free (tick k is due at start +
    /// `delay` + (k − 1) × `interval`), a later tick whose time has passed is dropped (the first always runs), and
    /// ticks never overlap. See the article "Repeating work and dispatch scopes".
    ///
    /// - Parameters:
    ///   - interval: The time between two ticks; under one nanosecond counts as one nanosecond.
    ///   - priority: How urgent the work is; mapped to a quality of service in production.
    ///   - delay: When the first tick is due (at once when zero or below); `nil` (the default) means after `interval`.
    ///   - label: A short name shown in diagnostics, carried by every tick.
    ///   - fileID: The dispatching file; leave the default.
    ///   - line: The dispatching line; leave the default.
    ///   - work: The work to run at each tick.
    /// - Returns: A handle whose ``TaskHandle/cancel()`` stops the series, a tick already due included.
    @discardableResult
    public func background(
        every interval: Duration,
        priority: BackgroundPriority = .medium,
        after delay: Duration? = nil,
        label: String? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ work: @escaping @Sendable () -> Void
    ) -> TaskHandle {
        RepeatingSeries(
            .background(work), on: self, every: interval, firstAfter: delay, priority: priority, label: label,
            callSite: CallSite(fileID: fileID, line: line)
        ).start()
    }

    /// Runs `work` on the main actor every `interval`, until the returned handle cancels the series.
    ///
    /// Timed as ``background(every:priority:after:label:fileID:line:_:)`` is: drift-free, missed ticks dropped,
    /// stopped by the handle.
    ///
    /// - Parameters:
    ///   - interval: The time between two ticks; under one nanosecond counts as one nanosecond.
    ///   - delay: When the first tick is due (at once when zero or below); `nil` (the default) means after `interval`.
    ///   - label: A short name shown in diagnostics, carried by every tick.
    ///   - fileID: The dispatching file; leave the default.
    ///   - line: The dispatching line; leave the default.
    ///   - work: The work to run on the main actor at each tick.
    /// - Returns: A handle whose ``TaskHandle/cancel()`` stops the series, a tick already due included.
    @discardableResult
    public func foreground(
        every interval: Duration,
        after delay: Duration? = nil,
        label: String? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ work: @escaping @MainActor @Sendable () -> Void
    ) -> TaskHandle {
        RepeatingSeries(
            .foreground(work), on: self, every: interval, firstAfter: delay, priority: .medium, label: label,
            callSite: CallSite(fileID: fileID, line: line)
        ).start()
    }

    /// The ticks of a series on this dispatcher's clock, for a `for await` loop in async code.
    ///
    /// Each iteration starts its own series, timed as ``background(every:priority:after:label:fileID:line:_:)`` is;
    /// waiting for a tick is an awaitable dispatch, which a test's drains see as they see a sleep on ``clock``. The
    /// sequence ends when the iterating task is cancelled, a tick is dropped (a cancelled ``DispatchScope``), or a
    /// test dispatcher gives up on the wait (a `ManualDispatcher`'s wait limit, which its `verifyIdle()` reports).
    /// See the article "Repeating work and dispatch scopes".
    ///
    /// - Parameters:
    ///   - interval: The time between two ticks; under one nanosecond counts as one nanosecond.
    ///   - delay: When the first tick is due (at once when zero or below); `nil` (the default) means after `interval`.
    ///   - label: A short name shown in diagnostics.
    ///   - fileID: The calling file; leave the default.
    ///   - line: The calling line; leave the default.
    /// - Returns: The ticks, each the number of the tick (1, 2, …).
    public func ticks(
        every interval: Duration,
        after delay: Duration? = nil,
        label: String? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> DispatcherTicks {
        let callSite = CallSite(fileID: fileID, line: line)
        let target = SeriesTarget(self)
        let clock = self.clock
        return DispatcherTicks {
            let timing = SeriesTiming(clock: clock, interval: interval, firstAfter: delay)
            let marker = SeriesMarker(interval: timing.interval, label: label, callSite: callSite)
            return { last in
                let (next, delay) = timing.next(after: last)
                do {
                    try await target.awaitTick(after: delay, marker: marker)
                    return next
                } catch {
                    return nil
                }
            }
        }
    }

}

extension SeriesTarget {
    /// Dispatches one tick of `marker`'s series, due after `delay`, and suspends until it has run.
    func awaitTick(after delay: Duration, marker: SeriesMarker) async throws {
        try Task.checkCancellation()
        let (label, callSite) = (marker.label, marker.callSite)
        let wait = TaskTracking.wait(on: describeAwaitableCall("ticks", label, callSite))
        let awaited = AwaitedDispatch<Void>(reporting: wait)
        try await self.awaitResult(through: awaited, binding: wait) {
            let body = AwaitedWork(
                { @Sendable () throws -> Void in }, ending: awaited, method: "ticks", label: label, callSite: callSite)
            var task = DispatchedTask(
                unbound: .background { body.run() }, label: label, delay: delay, callSite: callSite)
            task.series = marker
            return task
        }
    }
}

/// The ticks of a series on a dispatcher's clock: what ``TaskDispatcher/ticks(every:after:label:fileID:line:)``
/// returns.
public struct DispatcherTicks: AsyncSequence, Sendable {
    /// The number of a tick: 1 for the first; a tick dropped because its time had passed leaves a gap.
    public typealias Element = Int

    /// A tick sequence never throws: it ends instead.
    public typealias Failure = Never

    /// Waits for the next tick.
    public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
        private let step: @Sendable (Int64) async -> Int64?
        private var last: Int64 = 0
        private var finished = false

        init(step: @escaping @Sendable (Int64) async -> Int64?) {
            self.step = step
        }

        /// Suspends until the next tick is due and returns its number, or `nil` once the iterating task is cancelled
        /// or the dispatcher dropped the tick or gave up the wait.
        public mutating func next() async -> Int? {
            guard !self.finished, let tick = await self.step(self.last) else {
                self.finished = true
                return nil
            }
            self.last = tick
            return Int(truncatingIfNeeded: tick)
        }
    }

    private let makeStep: @Sendable () -> @Sendable (Int64) async -> Int64?

    init(_ makeStep: @escaping @Sendable () -> @Sendable (Int64) async -> Int64?) {
        self.makeStep = makeStep
    }

    /// Starts a series: its first tick is timed from this call.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(step: self.makeStep())
    }
}
