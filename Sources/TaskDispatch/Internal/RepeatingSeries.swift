import Synchronization

/// What a tick of a repeating series carries (``DispatchedTask/series``): the series as diagnostics name it.
package final class SeriesMarker: Sendable {
    /// The time between two ticks.
    package let interval: Duration
    /// The series' label, which each tick carries too.
    package let label: String?
    /// Where the series was started.
    package let callSite: CallSite

    package init(interval: Duration, label: String?, callSite: CallSite) {
        self.interval = interval
        self.label = label
        self.callSite = callSite
    }
}

extension Duration {
    /// `.nanoseconds(nanoseconds)` in one full-width multiplication, without the standard library's generic 128-bit
    /// arithmetic (see `Docs/Design.md`, "Repeating work and dispatch scopes").
    @inline(__always)
    fileprivate static func exactly(nanoseconds: Int64) -> Duration {
        let (high, low) = nanoseconds.multipliedFullWidth(by: 1_000_000_000)  // attoseconds
        return Duration(_high: high, low: low)
    }
}

/// A clock that reads its time as whole nanoseconds since a fixed point of its own, without a `Duration` or generic
/// code: a series reads it at each tick (`ManualDispatcher`'s virtual clock).
package protocol NanosecondReadingClock: Sendable {
    /// A closure that reads the time now, in nanoseconds since the clock's fixed point, straight from the clock's
    /// storage (no protocol witness at each call, and no reference to the clock).
    var nanosecondReader: @Sendable () -> Int64 { get }
}

/// The closure that reads `clock`'s time in nanoseconds, and whether there is one: a ``NanosecondReadingClock``'s, or
/// that of an ``AnyDispatcherClock`` over one. Not an optional closure, so that a call goes through no reabstraction
/// thunk.
func nanosecondReading(of clock: some Clock<Duration>) -> (read: @Sendable () -> Int64, reads: Bool) {
    if let reading = clock as? any NanosecondReadingClock { return (reading.nanosecondReader, true) }
    if let erased = clock as? AnyDispatcherClock, erased.readsNanoseconds { return (erased.nanosecondReader, true) }
    return ({ 0 }, false)
}

/// A dispatcher that its repeating series must not keep alive (the test's `ManualDispatcher`, whose release reports
/// the work left on it, a live series included): the series forwards its ticks through ``seriesForward`` instead of
/// holding the dispatcher.
package protocol SeriesForwarding: TaskDispatcher {
    /// Dispatches a tick without a reference to the dispatcher itself.
    var seriesForward: @Sendable (DispatchedTask) -> TaskHandle { get }

    /// Dispatches a tick due at the time, in nanoseconds of the dispatcher's `clock`, that the closure gives for the
    /// clock's time now, read in the critical section that takes the tick in: the tick reads no clock of its own.
    var seriesForwardAtDue: @Sendable (DispatchedTask, (_ nowNanoseconds: Int64) -> Int64) -> TaskHandle { get }
}

/// When the ticks of a series fall due on a clock: tick k (from 1) at `origin + k × interval`, so a late tick does not
/// push the later ones; a later tick whose due time has passed when its turn comes is skipped, while the first always
/// runs, at once if its time has passed (see ``next(after:)``).
struct SeriesTiming: Sendable {
    let interval: Duration
    /// The interval in nanoseconds when it is a whole number of them (nearly always): the next tick is then found
    /// in `Int64` arithmetic.
    private let wholeNanoseconds: Int64?
    /// The time since the origin on the series' clock: the one place that knows the clock's type, so that a tick
    /// pays for no generic code.
    private let elapsed: @Sendable () -> Duration
    /// Whether the clock reads in nanoseconds (see `nanosecondReading(of:)`) and the origin is within its range: then
    /// `nanosecondsNow` reads it and a tick does no `Duration` arithmetic.
    let readsNanoseconds: Bool
    private let nanosecondsNow: @Sendable () -> Int64
    private let originNanoseconds: Int64

    /// Starts the series now: its first tick after `delay` (at once when zero or below), or after `interval` when
    /// `delay` is `nil`. An interval under one nanosecond counts as one nanosecond; an interval or a delay over 2^62
    /// seconds (for ever) counts as 2^62 seconds, so that a tick's arithmetic stays in range.
    init<SeriesClock: Clock<Duration>>(clock: SeriesClock, interval: Duration, firstAfter delay: Duration?) {
        let furthest = AnyDispatcherClock.furthestOffset
        let interval = Swift.min(Swift.max(interval, .nanoseconds(1)), furthest)
        self.interval = interval
        let nanoseconds = interval.nanosecondsSaturated
        self.wholeNanoseconds = interval == .nanoseconds(nanoseconds) ? nanoseconds : nil
        // In [−interval, furthest − interval]: no overflow, and an origin never far in the past.
        let shift = Swift.min(Swift.max(delay ?? interval, .zero), furthest) - interval
        let shiftNanoseconds = shift.nanosecondsSaturated
        let (reader, reads) = nanosecondReading(of: clock)
        if reads, shift == .nanoseconds(shiftNanoseconds),
            case (let start, false) = reader().addingReportingOverflow(shiftNanoseconds)
        {
            // Without the clock, which may hold its dispatcher: the series must not keep it alive (see `SeriesTarget`).
            self.elapsed = { .nanoseconds(reader()) - .nanoseconds(start) }
            (self.readsNanoseconds, self.nanosecondsNow, self.originNanoseconds) = (true, reader, start)
        } else {
            let origin = clock.now.advanced(by: shift)
            self.elapsed = { origin.duration(to: clock.now) }
            (self.readsNanoseconds, self.nanosecondsNow, self.originNanoseconds) = (false, { 0 }, 0)
        }
    }

    /// The tick that comes after `tick`, and the delay from now until it is due: the first tick not yet past, so the
    /// ticks missed while the process was busy (or a tick ran longer than the interval) are dropped, not run in a burst.
    /// The first tick (after tick 0) is never dropped: a zero first delay is always a little past by the time the
    /// series dispatches it.
    func next(after tick: Int64) -> (tick: Int64, delay: Duration) {
        // The tick after `tick`, when it is not yet past, on a clock read in nanoseconds: the usual case of a test.
        if self.readsNanoseconds, let interval = self.wholeNanoseconds,
            case (let elapsed, false) = self.nanosecondsNow().subtractingReportingOverflow(self.originNanoseconds)
        {
            if tick < .max, case (let due, false) = (tick + 1).multipliedReportingOverflow(by: interval),
                due >= elapsed, case (let delay, false) = due.subtractingReportingOverflow(elapsed)
            {
                return (tick + 1, .exactly(nanoseconds: delay))
            }
            return self.next(after: tick, elapsed: .exactly(nanoseconds: elapsed))
        }
        return self.next(after: tick, elapsed: self.elapsed())
    }

    /// The tick after `tick` and its due time in the clock's nanoseconds, for the clock's time `now`: what
    /// ``next(after:)`` gives, for a clock that reads in nanoseconds (`readsNanoseconds`), as a time; past the
    /// clock's range, `Int64.max`.
    func nextDue(after tick: Int64, nowNanoseconds now: Int64) -> (tick: Int64, due: Int64) {
        if let interval = self.wholeNanoseconds,
            case (let elapsed, false) = now.subtractingReportingOverflow(self.originNanoseconds), tick < .max,
            case (let offset, false) = (tick + 1).multipliedReportingOverflow(by: interval), offset >= elapsed,
            case (let due, false) = self.originNanoseconds.addingReportingOverflow(offset)
        {
            return (tick + 1, due)
        }
        let (next, delay) = self.next(after: tick, elapsed: .nanoseconds(now) - .nanoseconds(self.originNanoseconds))
        let (due, overflow) = now.addingReportingOverflow(delay.nanosecondsRoundedUp)
        return (next, overflow ? .max : due)
    }

    private func next(after tick: Int64, elapsed: Duration) -> (tick: Int64, delay: Duration) {
        if let interval = self.wholeNanoseconds {
            // The tick after `tick`, when it is not yet past (the usual case; no division).
            if tick < .max, case (let due, false) = (tick + 1).multipliedReportingOverflow(by: interval),
                Duration.nanoseconds(due) >= elapsed
            {
                return (tick + 1, .nanoseconds(due) - elapsed)
            }
            if tick == 0 { return (1, .zero) }  // the first tick, past: at once
            // The first tick k > `tick` with k × interval ≥ elapsed.
            let whole = elapsed.nanosecondsSaturated
            let caughtUp =
                whole <= 0 ? 0 : whole / interval + (whole % interval == 0 && elapsed == .nanoseconds(whole) ? 0 : 1)
            let next = Swift.max(tick == .max ? .max : tick + 1, caughtUp)
            let (due, overflow) = next.multipliedReportingOverflow(by: interval)
            // Past `Int64` nanoseconds from the origin, which may lie an interval before the clock's zero: in `Duration`.
            return (next, overflow ? .nanoseconds(interval) * next - elapsed : .nanoseconds(due) - elapsed)
        }
        var next = tick + 1
        let late = elapsed - self.interval * next
        if late > .zero, tick == 0 { return (1, .zero) }  // the first tick, past: at once
        if late > .zero {
            let (sum, overflow) = next.addingReportingOverflow(
                late.nanosecondsSaturated / Swift.max(1, self.interval.nanosecondsSaturated))
            next = overflow ? .max : sum
            while next < .max, self.interval * next < elapsed { next += 1 }
        }
        return (next, self.interval * next - elapsed)
    }
}

/// One series of the callback verbs: dispatches its next tick through the dispatcher when a tick has run, and cancels
/// for the handle they return (``start()``).
///
/// `@unchecked Sendable`: the mutable state sits in `state`, behind its lock, except `next`, which is written only
/// before the dispatch of the tick that reads it: every dispatcher runs a task after its dispatch (a happens-before
/// edge), and the ticks run one after another.
final class RepeatingSeries: TaskCancelling, @unchecked Sendable {
    private struct State: Sendable {
        var isCancelled = false
        /// The last tick that began.
        var tick: Int64 = 0
        /// The handle of the tick dispatched last (kept once it began, until the next one replaces it). Not optional:
        /// an optional's destroy takes the generic path at every tick.
        var handle = TaskHandle(canceller: NoTask())
        /// The user's closure, released at the cancel (a tick that captures the handle makes no cycle).
        var work: DispatchedTask.Work?
    }

    private let target: SeriesTarget
    private let timing: SeriesTiming
    private let isForeground: Bool
    private let priority: BackgroundPriority
    private let marker: SeriesMarker
    private let state = LockedValue(State())
    /// The number of the tick dispatched last.
    private var next: Int64 = 0

    init<Dispatcher: TaskDispatcher>(
        _ work: DispatchedTask.Work,
        on dispatcher: Dispatcher,
        every interval: Duration,
        firstAfter delay: Duration?,
        priority: BackgroundPriority,
        label: String?,
        callSite: CallSite
    ) {
        self.target = SeriesTarget(dispatcher)
        self.timing = SeriesTiming(clock: dispatcher.clock, interval: interval, firstAfter: delay)
        self.isForeground = if case .foreground = work { true } else { false }
        self.state.withLock { $0.work = work }
        self.priority = priority
        self.marker = SeriesMarker(interval: self.timing.interval, label: label, callSite: callSite)
    }

    /// Dispatches the tick after `tick`, unless the series was cancelled.
    func schedule(after tick: Int64) {
        // The closures capture the series alone, so they allocate no context: the tick reads its number from it.
        let work: DispatchedTask.Work =
            self.isForeground ? .foreground { self.runTickOnMainActor() } : .background { self.runTick() }
        var task = DispatchedTask(
            unbound: work, label: self.marker.label, priority: self.priority, callSite: self.marker.callSite)
        task.series = self.marker
        // Swapped into the state, not copied: the handle of the tick before leaves it, and is released outside the lock.
        var handle: TaskHandle
        // This tick's number, kept here: once dispatched, the tick may run (and `self.next` move on) before the handle
        // is stored below.
        var next: Int64 = 0
        if self.timing.readsNanoseconds, let forward = self.target.forwardAtDue {
            // The number is set before the tick can run: in the dispatcher's critical section that takes it in.
            handle =
                forward(task) { now in
                    let due: Int64
                    (next, due) = self.timing.nextDue(after: tick, nowNanoseconds: now)
                    self.next = next
                    return due
                }
        } else {
            (next, task.delay) = self.timing.next(after: tick)
            self.next = next
            handle = self.target.dispatch(task)
        }
        let cancelled = self.state.withLock { state -> Bool in
            if state.isCancelled { return true }
            if state.tick < next { swap(&state.handle, &handle) }  // not begun yet (an auto-drain may have run it)
            return false
        }
        if cancelled { handle.cancel() }
    }

    /// Marks `tick` begun and returns the closure to run, or `nil` when the series was cancelled.
    @inline(__always)
    private func begin(_ tick: Int64) -> DispatchedTask.Work? {
        self.state.withLock { state in
            guard !state.isCancelled else { return nil }
            state.tick = tick
            return state.work
        }
    }

    private func runTick() {
        let tick = self.next
        guard case .background(let body)? = self.begin(tick) else { return }
        body()
        self.schedule(after: tick)
    }

    @MainActor private func runTickOnMainActor() {
        let tick = self.next
        guard case .foreground(let body)? = self.begin(tick) else { return }
        body()
        self.schedule(after: tick)
    }

    /// Dispatches the first tick and returns the series' handle. The pending tick holds the series, the handle holds it
    /// weakly: a tick that someone else cancels or drops (a ``DispatchScope``, a released dispatcher) lets the series
    /// and the user's closure go, and the handle then reads cancelled.
    func start() -> TaskHandle {
        self.schedule(after: 0)
        return TaskHandle(canceller: SeriesHandle(series: self))
    }

    func cancelTask() -> Bool {
        let (handle, work) = self.state.withLock { state -> (TaskHandle?, DispatchedTask.Work?) in
            guard !state.isCancelled else { return (nil, nil) }
            state.isCancelled = true
            defer { (state.handle, state.work) = (TaskHandle(canceller: NoTask()), nil) }
            return (state.handle, state.work)
        }
        guard let handle else { return false }
        let stoppedAlready = handle.isCancelled  // its pending tick was cancelled by someone else
        handle.cancel()
        _ = consume work  // the user's closure is released here, outside the lock
        return !stoppedAlready
    }

    /// Cancelled through its handle, or its next tick was cancelled by someone else (a ``DispatchScope``).
    var isTaskCancelled: Bool {
        let (cancelled, handle) = self.state.withLock { ($0.isCancelled, $0.handle) }
        return cancelled || handle.isCancelled
    }
}

/// The canceller of a series' handle (see ``RepeatingSeries/start()``): once the series is gone, it reads cancelled.
private struct SeriesHandle: TaskCancelling {
    weak let series: RepeatingSeries?

    func cancelTask() -> Bool { self.series?.cancelTask() ?? false }
    var isTaskCancelled: Bool { self.series?.isTaskCancelled ?? true }
}

/// The dispatcher a series dispatches its ticks through: the one it was started on, held strongly, except a
/// ``DispatchScope``, which a series of its own must not keep alive (its release is what stops the series).
struct SeriesTarget: TaskDispatcher {
    private let forward: @Sendable (DispatchedTask) -> TaskHandle?
    /// A ``SeriesForwarding`` dispatcher's ``SeriesForwarding/seriesForwardAtDue``.
    let forwardAtDue: (@Sendable (DispatchedTask, (Int64) -> Int64) -> TaskHandle)?

    init(_ dispatcher: some TaskDispatcher) {
        if let scope = dispatcher as? DispatchScope {
            (self.forward, self.forwardAtDue) = ({ [weak scope] in scope?.dispatch($0) }, nil)
        } else if let forwarding = dispatcher as? any SeriesForwarding {
            (self.forward, self.forwardAtDue) = (forwarding.seriesForward, forwarding.seriesForwardAtDue)
        } else {
            (self.forward, self.forwardAtDue) = ({ dispatcher.dispatch($0) }, nil)
        }
    }

    /// Dispatches `task`; once the scope is gone, drops it and returns a handle that reads cancelled.
    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.forward(task) ?? TaskHandle(canceller: DroppedTick())
    }
}

/// The canceller of a tick that a released scope never received.
struct DroppedTick: TaskCancelling {
    func cancelTask() -> Bool { false }
    var isTaskCancelled: Bool { true }
}
