import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

/// A clock that reads `lag` ahead of a `ManualDispatcher`'s: a tick that bumps `lag` looks, to the series, like a
/// tick that ran that long (the process was busy), without any real time passing.
struct LaggingClock: Clock {
    typealias Instant = ManualDispatcher.Clock.Instant
    let base: ManualDispatcher.Clock
    let lag: Locked<Duration>
    /// Whether each read of `now` adds a nanosecond to `lag`.
    var creeps = false

    var now: Instant {
        self.base.now.advanced(
            by: self.lag.withLock { lag in
                defer { if self.creeps { lag += .nanoseconds(1) } }
                return lag
            })
    }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await self.base.sleep(until: deadline.advanced(by: .zero - self.lag.withLock { $0 }), tolerance: tolerance)
    }
}

/// A user's decorator that forwards `dispatch(_:)` as it is, over a clock of its own.
struct LaggingDispatcher: ForwardsStartTask {
    let base: any TaskDispatcher
    let clock: LaggingClock

    init(base: ManualDispatcher) {
        self.base = base
        self.clock = LaggingClock(base: base.clock, lag: Locked(.zero))
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
    }
}

/// A decorator over a `ManualDispatcher` whose clock reads one nanosecond later at each read, as a real clock moves
/// between two reads: a series' start and its first dispatch see different times.
struct CreepingDispatcher: ForwardsStartTask {
    let base: any TaskDispatcher
    let clock: LaggingClock

    init(base: ManualDispatcher) {
        self.base = base
        self.clock = LaggingClock(base: base.clock, lag: Locked(.zero), creeps: true)
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
    }
}

@Suite struct RepeatingWorkTests {
    @Test(arguments: [ManualDispatcher.Mode.manual, .autoDrain], [TaskContext.background, .foreground])
    @MainActor
    func advanceRunsEachTickAtItsDueTimeInOrderWithOtherTasks(mode: ManualDispatcher.Mode, context: TaskContext) throws
    {
        let dispatcher = ManualDispatcher(mode: mode)
        let log = EventLog()
        dispatcher.background(after: .seconds(2), label: "one-off") { log.record("one-off at \(dispatcher.now)") }
        let series =
            context == .background
            ? dispatcher.background(every: .seconds(1), label: "poll") { log.record("tick at \(dispatcher.now)") }
            : dispatcher.foreground(every: .seconds(1), label: "poll") {
                MainActor.assertIsolated()
                log.record("tick at \(dispatcher.now)")
            }

        try dispatcher.advance(by: .seconds(3))

        #expect(
            log.events == [
                "tick at 1.0 seconds", "one-off at 2.0 seconds", "tick at 2.0 seconds", "tick at 3.0 seconds",
            ])
        let pending = dispatcher.pendingTasks
        #expect(pending.count == 1)
        #expect(pending.first?.repeatInterval == .seconds(1))
        #expect(pending.first?.dueTime == .seconds(4))
        #expect(pending.first?.description.contains("\"poll\"") == true)
        #expect(pending.first?.description.contains("(a tick of a series every 1 s)") == true, "\(pending)")
        let ticks = dispatcher.history.filter { $0.task.repeatInterval != nil }
        #expect(ticks.map(\.startTime) == [.seconds(1), .seconds(2), .seconds(3)])
        #expect(ticks.allSatisfy { $0.description.contains("(a tick of a series every 1 s)") })
        #expect(series.cancel())
        #expect(series.isCancelled)
        #expect(!series.cancel())
        try dispatcher.verifyIdle()
    }

    @Test(arguments: [TaskContext.background, .foreground])
    func aLiveSeriesDoesNotKeepItsDispatcherAlive(_ context: TaskContext) {
        // Its release is what reports the series left running to a test that checks nothing itself.
        weak var released: ManualDispatcher?
        do {
            let dispatcher = ManualDispatcher()
            released = dispatcher
            if context == .background {
                dispatcher.background(every: .seconds(1), label: "poll") {}
            } else {
                dispatcher.foreground(every: .seconds(1), after: .milliseconds(500), label: "poll") {}
            }
            #expect(dispatcher.pendingTaskCount == 1)
        }
        #expect(released == nil)
    }

    /// The dispatcher's release cancels the ticks it reported, so a series that nothing cancelled lets go of its
    /// closure and of the dispatcher's storage (the tick held the series, which held the storage).
    @Test(arguments: [TaskContext.background, .foreground])
    func aLiveSeriesLetsGoOfItsClosureWhenItsDispatcherGoes(_ context: TaskContext) throws {
        final class Probe: Sendable {}
        weak var released: Probe?
        do {
            let dispatcher = ManualDispatcher()
            let probe = Probe()
            released = probe
            if context == .background {
                dispatcher.background(every: .seconds(1), label: "poll") { _ = probe }
            } else {
                dispatcher.foreground(every: .seconds(1), label: "poll") { _ = probe }
            }
            try dispatcher.advance(by: .seconds(1))
            #expect(released != nil, "a live series keeps its closure")
        }
        #expect(released == nil, "the dispatcher's release did not let go of the series' closure")
    }

    /// A cancelled series lets its closure go at once, so a tick that captures its own handle, or an owner that
    /// holds the handle, makes no cycle that outlives the cancel.
    @Test func cancelReleasesTheSeriesClosure() throws {
        final class Probe: Sendable {}
        let dispatcher = ManualDispatcher()
        weak var released: Probe?
        let series: TaskHandle
        do {
            let probe = Probe()
            released = probe
            series = dispatcher.background(every: .seconds(1)) { _ = probe }
        }
        try dispatcher.advance(by: .seconds(2))
        #expect(released != nil, "a live series keeps its closure")
        #expect(series.cancel())
        #expect(released == nil, "the cancel released the closure while the handle is still held")
        try dispatcher.verifyIdle()
    }

    /// A series stopped by its scope lets its closure go while the test still holds its handle, and the handle says
    /// the series was stopped already.
    @Test(arguments: [ManualDispatcher.Mode.manual, .autoDrain], [TaskContext.background, .foreground])
    @MainActor
    func aSeriesStoppedByItsScopeLetsItsClosureGo(mode: ManualDispatcher.Mode, context: TaskContext) throws {
        final class Probe: Sendable {}
        let dispatcher = ManualDispatcher(mode: mode)
        let scope = DispatchScope(dispatcher)
        weak var released: Probe?
        let series: TaskHandle
        do {
            let probe = Probe()
            released = probe
            series =
                context == .background
                ? scope.background(every: .seconds(1)) { _ = probe }
                : scope.foreground(every: .seconds(1)) { _ = probe }
        }
        try dispatcher.advance(by: .seconds(2))
        #expect(released != nil, "a live series keeps its closure")
        scope.cancelAll()
        #expect(released == nil, "the scope's cancelAll() released the closure while the handle is still held")
        #expect(series.isCancelled)
        #expect(!series.cancel(), "the scope had stopped the series already")
        // The same when the scope's release stops the series.
        weak var releasedWithTheScope: Probe?
        let kept: TaskHandle
        do {
            let probe = Probe()
            releasedWithTheScope = probe
            kept = DispatchScope(dispatcher).background(every: .seconds(1)) { _ = probe }
        }
        #expect(releasedWithTheScope == nil, "the scope's release released the closure while the handle is still held")
        #expect(kept.isCancelled && !kept.cancel())
        try dispatcher.verifyIdle()
    }

    @Test func aDispatcherReleasedWithALiveSeriesLetsItsClosureGo() throws {
        final class Probe: Sendable {}
        let registry = ManualDispatcherRegistry()
        weak var released: Probe?
        let series: TaskHandle
        do {
            let probe = Probe()
            released = probe
            series = registry.track { ManualDispatcher() }.background(every: .seconds(1), label: "poll") { _ = probe }
        }
        #expect(released == nil, "the dispatcher's release released the closure while the handle is still held")
        #expect(series.isCancelled)
        #expect(!series.cancel(), "the release had stopped the series already")
        #expect(registry.idleFailures().first?.description.contains("\"poll\"") == true)
    }

    @Test func aFirstDelayStartsTheSeriesAndTheLaterTicksKeepTheirGrid() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        let series = dispatcher.background(every: .seconds(10), after: .seconds(1)) { log.record("\(dispatcher.now)") }
        try dispatcher.advance(by: .seconds(21))
        #expect(log.events == ["1.0 seconds", "11.0 seconds", "21.0 seconds"])
        series.cancel()
        try dispatcher.verifyIdle()
    }

    @Test func cancelStopsATickThatIsAlreadyDue() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        let series = dispatcher.background(every: .seconds(1), after: .zero, label: "poll") { log.record("tick") }
        #expect(dispatcher.pendingTaskCount == 1)  // due now, not run
        #expect(series.cancel())
        #expect(dispatcher.pendingTaskCount == 0)
        try dispatcher.advance(by: .seconds(5))
        #expect(log.events.isEmpty)
        try dispatcher.verifyIdle()
    }

    @Test func aCancelFromATaskDueAtTheSameTimeStopsTheTickBehindIt() throws {
        // The one-off is dispatched first, so at 2 s it runs before the tick due then: a cancel racing a due tick,
        // decided by the dispatcher's order rather than by threads.
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        let series = Locked<TaskHandle?>(nil)
        dispatcher.background(after: .seconds(2), label: "stop") {
            log.record("stop: \(series.withLock { $0?.cancel() } ?? false)")
        }
        series.withLock { $0 = dispatcher.background(every: .seconds(1)) { log.record("tick at \(dispatcher.now)") } }
        try dispatcher.advance(by: .seconds(5))
        #expect(log.events == ["tick at 1.0 seconds", "stop: true"])
        try dispatcher.verifyIdle()
    }

    @Test func aCancelFromInsideATickStopsTheSeriesAfterIt() throws {
        let dispatcher = ManualDispatcher()
        let count = Locked(0)
        let series = Locked<TaskHandle?>(nil)
        series.withLock {
            $0 = dispatcher.background(every: .seconds(1)) {
                if count.withLock({
                    $0 += 1
                    return $0
                }) == 2 {
                    series.withLock { _ = $0?.cancel() }
                }
            }
        }
        try dispatcher.advance(by: .seconds(10))
        #expect(count.withLock { $0 } == 2)
        try dispatcher.verifyIdle()
    }

    /// An interval under one nanosecond (zero, negative) counts as one nanosecond, a negative first delay means at
    /// once, and an interval past the clock's range ticks never: none traps or loops.
    @Test func intervalsAndDelaysAtTheEdgesOfTheirRange() throws {
        let dispatcher = ManualDispatcher()
        let count = Locked(0)
        let zero = dispatcher.background(every: .zero, label: "zero") { count.withLock { $0 += 1 } }
        let negative = dispatcher.background(every: .seconds(-1), after: .seconds(-5), label: "negative") {
            count.withLock { $0 += 100 }
        }
        #expect(dispatcher.pendingTasks.map(\.repeatInterval) == [.nanoseconds(1), .nanoseconds(1)])
        #expect(dispatcher.pendingTasks.map(\.dueTime) == [.zero, .nanoseconds(1)])
        try dispatcher.advance(by: .nanoseconds(3))
        #expect(count.withLock { $0 } == 3 + 4 * 100)
        #expect(zero.cancel())
        #expect(negative.cancel())
        let huge = dispatcher.background(every: .seconds(Int64.max), label: "huge") { count.withLock { $0 += 1 } }
        try dispatcher.advance(by: .seconds(1_000_000_000))
        #expect(count.withLock { $0 } == 403)
        #expect(dispatcher.pendingTaskCount == 1)
        #expect(huge.cancel())
        // A first delay past any clock's range, directly and through a scope: the first tick never falls due.
        let scope = DispatchScope(dispatcher)
        let far = [
            dispatcher.background(every: .seconds(1), after: Duration(_high: .max, low: .max)) {},
            dispatcher.foreground(every: .seconds(1), after: .seconds(Int64.max)) {},
            scope.background(every: .seconds(Int64.max), after: Duration(_high: .max, low: .max)) {},
        ]
        #expect(
            dispatcher.pendingTasks.map(\.dueTime) == Array(repeating: .nanoseconds(Int64.max), count: 3),
            "\(dispatcher.pendingTasks)")
        try dispatcher.advance(by: .seconds(1_000_000_000))
        #expect(far.allSatisfy { $0.cancel() })
        try dispatcher.verifyIdle()
    }

    /// The first tick always runs, at once when its time has passed by the series' first dispatch (a zero delay on a
    /// clock that moved meanwhile); a later tick whose time has passed is dropped as before.
    @Test func theFirstTickRunsAtOnceWhenItsTimeHasPassed() async throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        let series = CreepingDispatcher(base: dispatcher).background(every: .seconds(10), after: .zero) {
            log.record("tick at \(dispatcher.now)")
        }
        #expect(dispatcher.pendingTasks.first?.dueTime == .zero, "\(dispatcher.pendingTasks)")
        try await dispatcher.runNextBackground()
        #expect(log.events == ["tick at 0.0 seconds"])
        let second = try #require(dispatcher.pendingTasks.first?.dueTime)
        #expect(second > .seconds(9) && second <= .seconds(10), "the second tick is due an interval after the start")
        #expect(series.cancel())
        // A tick loop's first tick is tick 1 (auto-drain runs it inside its dispatch).
        let draining = ManualDispatcher(mode: .autoDrain)
        var ticks: [Int] = []
        for await tick in CreepingDispatcher(base: draining).ticks(every: .seconds(10), after: .zero) {
            ticks.append(tick)
            break
        }
        #expect(ticks == [1])
    }

    /// A first tick that auto-drain runs inside its own dispatch schedules the second from inside that dispatch: the
    /// handle the series keeps must be the second tick's, so that `cancel()` takes the pending tick away.
    @Test(arguments: [TaskContext.background, .foreground])
    @MainActor func aTickRunInsideItsOwnDispatchLeavesTheNextOneCancellable(context: TaskContext) throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let count = Locked(0)
        let series =
            context == .background
            ? dispatcher.background(every: .seconds(1), after: .zero) { count.withLock { $0 += 1 } }
            : dispatcher.foreground(every: .seconds(1), after: .zero) { count.withLock { $0 += 1 } }
        #expect(count.withLock { $0 } == 1)
        #expect(dispatcher.pendingTasks.count == 1)
        #expect(series.cancel())
        #expect(dispatcher.pendingTasks.isEmpty, "\(dispatcher.pendingTasks)")
        try dispatcher.verifyIdle()
    }

    /// A first delay far in the past (a "never refreshed" sentinel such as `Date.distantPast`) means at once, then the
    /// interval: no tick loop at the same instant, and no trap where the delay less the interval overflows.
    @Test func aFirstDelayFarInThePastMeansAtOnce() throws {
        let dispatcher = ManualDispatcher()
        let count = Locked(0)
        let series = dispatcher.background(every: .seconds(60), after: .seconds(-64_000_000_000)) {
            count.withLock { $0 += 1 }
        }
        try dispatcher.advance(by: .seconds(150))
        #expect(count.withLock { $0 } == 3)  // at 0, 60 and 120 s
        #expect(series.cancel())
        let huge = Duration.seconds(Int64.max) * 10
        let edge = dispatcher.background(every: huge, after: .zero - huge) { count.withLock { $0 += 1 } }
        try dispatcher.advance(by: .seconds(1))
        #expect(count.withLock { $0 } == 4)
        #expect(edge.cancel())
        try dispatcher.verifyIdle()
    }

    @Test func ticksMissedWhileATickRanLongAreDroppedNotRunInABurst() throws {
        // A tick that takes 2.5 s (the decorator's clock jumps inside it): the ticks due at 2 s and 3 s have passed
        // when its turn ends, so the next is the one due at 4 s, and the grid does not move.
        let dispatcher = ManualDispatcher()
        let lagging = LaggingDispatcher(base: dispatcher)
        let log = EventLog()
        let series = lagging.background(every: .seconds(1)) {
            log.record("\(lagging.clock.now.offset)")
            if log.events.count == 1 { lagging.clock.lag.withLock { $0 = .milliseconds(2_500) } }
        }
        try dispatcher.advance(by: .seconds(3))
        #expect(log.events == ["1.0 seconds", "4.0 seconds", "5.0 seconds"])
        series.cancel()
        try dispatcher.verifyIdle()
    }

    @Test func runUntilIdleThrowsAtOnceNamingTheSeries() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(label: "due now") { log.record("due now") }
        let series = dispatcher.background(every: .seconds(1), label: "poll") { log.record("tick") }
        let line = #line - 1
        let error = #expect(throws: ManualDispatcherError.self) { try synchronously { try dispatcher.runUntilIdle() } }
        #expect(error?.kind == .runawayTasks(limit: dispatcher.runawayLimit))
        let summary = error?.summary ?? ""
        #expect(summary.contains("runUntilIdle() would move the clock for ever"), "\(summary)")
        #expect(summary.contains("the repeating series \"poll\" started at"), "\(summary)")
        #expect(summary.contains("RepeatingWorkTests.swift:\(line)"), "\(summary)")
        #expect(summary.contains("advance(by:)"), "\(summary)")
        #expect(summary.contains("cancel the series"), "\(summary)")
        #expect(log.events == ["due now"])  // no tick ran
        #expect(dispatcher.now == .zero)
        series.cancel()
        try dispatcher.verifyIdle()
    }

    /// A first delay shorter than an interval of centuries puts the series' origin an interval before the start: the
    /// second tick, due 2^33 s in, is still on the clock, though two intervals overflow `Int64` nanoseconds.
    @Test func aHugeIntervalWithAShortFirstDelayKeepsItsGrid() throws {
        let dispatcher = ManualDispatcher(runawayLimit: 20)
        let interval = Duration.seconds(1 << 33)
        let times = Locked<[Duration]>([])
        let series = dispatcher.background(every: interval, after: .zero) {
            times.withLock { $0.append(dispatcher.now) }
        }
        try dispatcher.advance(to: interval)
        #expect(times.withLock { $0 } == [.zero, interval])
        // The third tick, at 3 × 2^33 s, lies past the end of the clock: it never falls due.
        #expect(dispatcher.pendingTasks.first?.dueTime == .nanoseconds(Int64.max), "\(dispatcher.pendingTasks)")
        #expect(series.cancel())
        try dispatcher.verifyIdle()
    }

    /// A series whose next tick lies past the end of the virtual clock never falls due: a drain to idle ends, as it
    /// does over a one-off task that far away, and the series stays pending.
    @Test func aSeriesPastTheEndOfTheClockDoesNotStopADrain() throws {
        let dispatcher = ManualDispatcher()
        let series = dispatcher.background(every: .seconds(10_000_000_000), label: "never") {}
        try dispatcher.runUntilIdle()
        #expect(dispatcher.pendingTaskCount == 1 && dispatcher.now == .zero)
        series.cancel()
        try dispatcher.verifyIdle()
    }

    /// An advance to the clock's last instant is an advance, not a drain to idle: it runs the ticks inside the window
    /// (it threw the live-series error of `runUntilIdle()`, whose target is that instant too).
    @Test(arguments: [false, true])
    func anAdvanceToTheLastInstantRunsTheTicksInside(async: Bool) async throws {
        let dispatcher = ManualDispatcher()
        let century = Duration.seconds(100 * 365 * 24 * 3_600)
        let ticks = Locked(0)
        let series = dispatcher.background(every: century, label: "century") { ticks.withLock { $0 += 1 } }
        let end = Duration.nanoseconds(Int64.max - 1)
        let advanceSynchronously: () throws -> Void = { try dispatcher.advance(to: end) }
        if async { try await dispatcher.advance(to: end) } else { try advanceSynchronously() }
        #expect(ticks.withLock { $0 } == 2)
        #expect(dispatcher.now == end)
        series.cancel()
        try dispatcher.verifyIdle()
    }

    @Test func asyncRunUntilIdleThrowsAtOnceToo() async throws {
        let dispatcher = ManualDispatcher()
        let series = dispatcher.foreground(every: .seconds(1), label: "poll") {}
        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.runUntilIdle() }
        #expect(error?.kind == .runawayTasks(limit: dispatcher.runawayLimit))
        #expect(error?.summary.contains("repeating series \"poll\"") == true, "\(String(describing: error))")
        #expect(dispatcher.history.isEmpty)
        series.cancel()
        try dispatcher.verifyIdle()
    }

    /// Auto-advance does not jump to a tick when only live series are left (it would jump for ever), and leaves no
    /// error behind: `advance(by:)` runs the ticks, `verifyIdle()` names the series, and once cancelled it is idle.
    @Test(arguments: [TaskContext.background, .foreground])
    @MainActor
    func autoAdvanceDoesNotMoveTheClockForEverOverALiveSeries(_ context: TaskContext) throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)
        let log = EventLog()
        let series =
            context == .background
            ? dispatcher.background(every: .seconds(1), label: "poll") { log.record("tick at \(dispatcher.now)") }
            : dispatcher.foreground(every: .seconds(1), label: "poll") { log.record("tick at \(dispatcher.now)") }
        #expect(log.events.isEmpty)
        #expect(dispatcher.now == .zero)
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error?.kind == .pendingTasks)
        #expect(
            error?.summary.contains("the next tick of 1 live repeating series (\"poll\" every 1 s") == true,
            "\(String(describing: error))")
        try dispatcher.advance(by: .seconds(2))
        #expect(log.events == ["tick at 1.0 seconds", "tick at 2.0 seconds"])
        // A one-off due later is reached, and the ticks on the way run (the one-off, dispatched first, before the tick
        // due with it); then only the series is left again.
        dispatcher.background(after: .seconds(2), label: "one-off") { log.record("one-off at \(dispatcher.now)") }
        #expect(log.events.suffix(3) == ["tick at 3.0 seconds", "one-off at 4.0 seconds", "tick at 4.0 seconds"])
        #expect(dispatcher.now == .seconds(4))
        series.cancel()
        try dispatcher.verifyIdle()
        #expect(dispatcher.now == .seconds(4))
    }

    /// A task that never falls due (delayed past the clock's end) beside a live series does not make auto-advance jump
    /// through the ticks: it jumped until the runaway limit, since the series was not all that was left (found by the
    /// model-based test).
    @Test func aTaskThatNeverFallsDueBesideALiveSeriesDoesNotMakeAutoAdvanceJump() throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance, runawayLimit: 50)
        let never = dispatcher.background(after: .seconds(Int64.max), label: "never") {}
        let series = dispatcher.background(every: .nanoseconds(1_000), label: "poll") {}
        #expect(dispatcher.now == .zero)
        #expect(dispatcher.history.isEmpty)
        try dispatcher.runCurrent()  // no runaway error left for the next call
        try dispatcher.advance(by: .microseconds(3))
        #expect(dispatcher.history.map(\.task.label) == ["poll", "poll", "poll"])
        series.cancel()
        never.cancel()
        try dispatcher.verifyIdle()
    }

    /// `verifyIdle()` names a live series, and its advice leads with cancelling it: `runUntilIdle()`, the advice for
    /// other pending tasks, would throw over it.
    @Test(arguments: [false, true])
    func verifyIdleReportsALiveSeriesAsSuch(withAnotherTask: Bool) throws {
        let dispatcher = ManualDispatcher()
        let series = dispatcher.background(every: .seconds(1), label: "poll") {}
        if withAnotherTask { dispatcher.background(label: "one-off") {} }
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error?.kind == .pendingTasks)
        let summary = error?.summary ?? ""
        #expect(
            summary.contains(
                "never ran, \(withAnotherTask ? "among them " : "")the next tick of 1 live repeating series (\"poll\" every 1 s"
            ),
            "\(summary)")
        #expect(
            summary.contains(
                "Cancel the series before the end of the test (its handle, the DispatchScope it was started through"),
            "\(summary)")
        #expect(!summary.contains("Run them (runUntilIdle())"), "\(summary)")
        #expect(summary.contains("run the other pending tasks (runUntilIdle()) or cancel them") == withAnotherTask)
        series.cancel()
        if withAnotherTask { try dispatcher.runUntilIdle() }
        try dispatcher.verifyIdle()
    }

    /// A tick loop left running: the check's advice cancels the loop before it drives the tracked task to its end.
    @Test func verifyIdleOverALiveTickLoopSaysToCancelItFirst() async throws {
        let dispatcher = ManualDispatcher()
        let poll = dispatcher.startTask(label: "poll loop") {
            for await _ in dispatcher.ticks(every: .seconds(1), label: "poll") {}
        }
        try await dispatcher.advance(by: .seconds(1))
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        let summary = error?.summary ?? ""
        let cancel = summary.firstRange(of: "Cancel the series before the end of the test")
        let drive = summary.firstRange(of: "Then drive them to the end with try await dispatcher.runUntilIdle()")
        #expect(cancel != nil && drive != nil && cancel!.lowerBound < drive!.lowerBound, "\(summary)")
        #expect(summary.contains("for a ticks(every:) loop, the task that iterates it"))
        poll.cancel()
        try await dispatcher.runUntilIdle()
        try dispatcher.verifyIdle()
    }

    @Test func aDecoratorThatForwardsDispatchForwardsTheTicks() throws {
        let dispatcher = ManualDispatcher()
        let decorator = ForwardingDispatcher(base: dispatcher)
        let count = Locked(0)
        let series = decorator.background(every: .seconds(1), label: "poll") { count.withLock { $0 += 1 } }
        try dispatcher.advance(by: .seconds(3))
        #expect(count.withLock { $0 } == 3)
        #expect(dispatcher.pendingTasks.first?.repeatInterval == .seconds(1))
        series.cancel()
        try dispatcher.verifyIdle()
    }

    // MARK: - The async form

    @Test func aTickLoopInATrackedTaskIsDrivenByAdvance() async throws {
        let dispatcher = ManualDispatcher()
        let ticks = Locked<[Int]>([])
        let task = dispatcher.startTask(label: "countdown") {
            for await tick in dispatcher.ticks(every: .seconds(1), label: "countdown tick") {
                ticks.withLock { $0.append(tick) }
                if tick == 3 { break }
            }
        }
        try await dispatcher.advance(by: .seconds(2))
        #expect(ticks.withLock { $0 } == [1, 2])
        #expect(dispatcher.pendingTasks.map(\.repeatInterval) == [.seconds(1)])
        try await dispatcher.advance(by: .seconds(1))
        #expect(ticks.withLock { $0 } == [1, 2, 3])
        try await dispatcher.value(of: task)
        try dispatcher.verifyIdle()
    }

    /// While the test waits for a task, auto-advance drives a tick loop as it drives sleeps: a countdown ends; one
    /// that never ends meets the runaway limit, which names the series.
    @Test func aTickLoopAwaitedByTheTestIsDrivenByAutoAdvance() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)
        let countdown = dispatcher.startTask(label: "countdown") {
            var seen: [Int] = []
            for await tick in dispatcher.ticks(every: .seconds(1), label: "countdown tick") {
                seen.append(tick)
                if tick == 3 { break }
            }
            return seen
        }
        #expect(try await dispatcher.value(of: countdown) == [1, 2, 3])
        #expect(dispatcher.now == .seconds(3))
        try dispatcher.verifyIdle()

        let endless = ManualDispatcher(mode: .autoAdvance, runawayLimit: 50)
        let poll = endless.startTask(label: "poll loop") {
            for await _ in endless.ticks(every: .seconds(1), label: "poll") {}
        }
        let error = await #expect(throws: ManualDispatcherError.self) { try await endless.value(of: poll) }
        #expect(error?.kind == .runawayTasks(limit: 50))
        #expect(
            error?.summary.contains("auto-advance would move the clock for ever: the repeating series \"poll\"")
                == true,
            "\(String(describing: error))")
        poll.cancel()
        _ = try? await endless.value(of: poll)
    }

    /// The test's own loop over `ticks(every:)` is driven by auto-advance as the test's own sleeps are; where nothing
    /// drives it (manual mode), its await ends at the wait limit and the report names the loop as written.
    @Test func theTestsOwnTickLoop() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)
        var seen: [Int] = []
        for await tick in dispatcher.ticks(every: .seconds(1), label: "own") {
            seen.append(tick)
            if tick == 3 { break }
        }
        #expect(seen == [1, 2, 3])
        #expect(dispatcher.now == .seconds(3))
        try dispatcher.verifyIdle()

        let manual = ManualDispatcher(waitLimit: .milliseconds(100))
        for await _ in manual.ticks(every: .seconds(1), label: "undriven") { Issue.record("a tick ran undriven") }
        let error = #expect(throws: ManualDispatcherError.self) { try manual.verifyIdle() }
        #expect(error?.summary.contains("ticks \"undriven\" (") == true, "\(String(describing: error))")
        #expect(error?.summary.contains("(a ticks(every:) loop, which cannot throw, ended instead)") == true)
    }

    @Test func asyncRunUntilIdleThrowsOverALiveTickLoop() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "poll loop") {
            for await _ in dispatcher.ticks(every: .seconds(1), label: "poll") {}
        }
        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.runUntilIdle() }
        #expect(error?.summary.contains("repeating series \"poll\"") == true, "\(String(describing: error))")
        #expect(error?.summary.contains("for a ticks(every:) loop, the task that iterates it") == true)
        task.cancel()
        try await dispatcher.settle()
        try dispatcher.verifyIdle()
    }

    @Test func cancellingTheIteratingTaskEndsTheSequence() async throws {
        let dispatcher = ManualDispatcher()
        let ended = Locked(false)
        let task = dispatcher.startTask(label: "poll loop") {
            for await _ in dispatcher.ticks(every: .seconds(1)) {}
            ended.withLock { $0 = true }
        }
        try await dispatcher.advance(by: .seconds(2))
        task.cancel()
        try await dispatcher.settle()
        #expect(ended.withLock { $0 })
        try dispatcher.verifyIdle()
    }

    @Test func aTickLoopDropsTheTicksItsBodyMissed() async throws {
        let dispatcher = ManualDispatcher()
        let lagging = LaggingDispatcher(base: dispatcher)
        let ticks = Locked<[Int]>([])
        let task = lagging.startTask(label: "loop") {
            for await tick in lagging.ticks(every: .seconds(1)) {
                ticks.withLock { $0.append(tick) }
                if tick == 1 { lagging.clock.lag.withLock { $0 = .milliseconds(2_500) } }
                if tick >= 5 { break }
            }
        }
        try await dispatcher.advance(by: .seconds(3))
        #expect(ticks.withLock { $0 } == [1, 4, 5])
        try await dispatcher.value(of: task)
        try dispatcher.verifyIdle()
    }

    @Test func aCallbackSeriesStartedInsideATrackedTaskTicksLikeAnyOther() async throws {
        let dispatcher = ManualDispatcher()
        let count = Locked(0)
        let task = dispatcher.startTask(label: "start polling") {
            dispatcher.background(every: .seconds(1), label: "poll") { count.withLock { $0 += 1 } }
        }
        try await dispatcher.settle()
        let series = try await dispatcher.value(of: task)
        try await dispatcher.advance(by: .seconds(3))
        #expect(count.withLock { $0 } == 3)
        series.cancel()
        try dispatcher.verifyIdle()
    }
}
