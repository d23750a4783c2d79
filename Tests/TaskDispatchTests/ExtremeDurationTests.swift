import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

/// A duration at the edge of what `Duration` holds. Before issue 17 (item 1) every public API that converted
/// one of these trapped in `Duration.components` ("Not enough bits to represent the passed value") or in 128-bit
/// arithmetic.
enum ExtremeDuration: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case int64MaxSeconds
    case int64MaxSecondsPlusOne
    case int64MaxSecondsAndAlmostOneMore
    case largest
    case smallest
    case int64MinSeconds
    case minusOneSecond
    case minusOneNanosecond
    /// Finer than the virtual clock: before, `advance(by:)` truncated it to zero and did not throw.
    case minusOneAttosecond

    var duration: Duration {
        switch self {
        case .int64MaxSeconds: .seconds(Int64.max)
        case .int64MaxSecondsPlusOne: .seconds(Int64.max) + .seconds(1)
        case .int64MaxSecondsAndAlmostOneMore:
            Duration(secondsComponent: Int64.max, attosecondsComponent: 999_999_999_999_999_999)
        // The largest and smallest values are 128-bit attosecond counts, some 1.7 × 10^20 s either way.
        case .largest: Duration(_high: .max, low: .max)
        case .smallest: Duration(_high: .min, low: 0)
        case .int64MinSeconds: .seconds(Int64.min)
        case .minusOneSecond: .seconds(-1)
        case .minusOneNanosecond: .nanoseconds(-1)
        case .minusOneAttosecond: Duration(secondsComponent: 0, attosecondsComponent: -1)
        }
    }

    /// Whether the duration is positive: a delay or deadline this far out is never reached.
    var isPositive: Bool { self.duration > .zero }

    var testDescription: String { "\(self.rawValue) (\(self.duration))" }

    static let positive = allCases.filter(\.isPositive)
    static let negative = allCases.filter { !$0.isPositive }
}

/// Every public API that takes a `Duration` or an instant, on all three dispatchers, with the extremes: a due
/// time past the clock's range is never reached, a real-time limit saturates, a negative one means now. Nothing
/// here waits on a far-future timer: those tasks are cancelled, and the waits with huge limits have their
/// condition met.
/// The `waitLimit` of the dispatchers whose waits are expected to end: generous, since only a failing test spends
/// it. The extreme limits are passed to the calls that test them.
private let expectedWaitLimit = Duration.seconds(60)

@Suite struct ExtremeDurationTests {
    // MARK: - ManualDispatcher: the virtual clock

    @Test(.timeLimit(.minutes(1)), arguments: ExtremeDuration.allCases)
    func aClockSleepForAnyDurationNeverWakesOrReturnsAtOnce(extreme: ExtremeDuration) async throws {
        let dispatcher = ManualDispatcher(waitLimit: expectedWaitLimit)
        try await dispatcher.advance(by: .seconds(1))
        let clock = dispatcher.clock
        let sleeper = Task { try await clock.sleep(for: extreme.duration) }
        try await Self.expectSleep(sleeper, on: dispatcher, neverWakes: extreme.isPositive)
    }

    @Test(.timeLimit(.minutes(1)), arguments: ExtremeDuration.allCases)
    func aClockSleepUntilAnyInstantNeverWakesOrReturnsAtOnce(extreme: ExtremeDuration) async throws {
        let dispatcher = ManualDispatcher(waitLimit: expectedWaitLimit)
        try await dispatcher.advance(by: .seconds(1))
        let clock = dispatcher.clock
        let deadline = ManualDispatcher.Clock.Instant(offset: extreme.duration)
        let sleeper = Task { try await clock.sleep(until: deadline) }
        try await Self.expectSleep(sleeper, on: dispatcher, neverWakes: extreme.isPositive)
    }

    @Test(arguments: ExtremeDuration.allCases)
    func clockInstantsSaturateInsteadOfTrapping(extreme: ExtremeDuration) throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.advance(by: .seconds(1))
        let now = dispatcher.clock.now
        let moved = now.advanced(by: extreme.duration).advanced(by: extreme.duration)
        #expect((moved > now) == extreme.isPositive)
        let last = ManualDispatcher.Clock.Instant(offset: Duration(_high: .max, low: .max))
        let first = ManualDispatcher.Clock.Instant(offset: Duration(_high: .min, low: 0))
        #expect(
            last.advanced(by: extreme.duration) == (extreme.isPositive ? last : last.advanced(by: extreme.duration)))
        #expect(
            first.advanced(by: extreme.duration) == (extreme.isPositive ? first.advanced(by: extreme.duration) : first))
        #expect(first.duration(to: last) == last.offset)
        #expect(last.duration(to: first) == first.offset)
        #expect(moved.duration(to: now) <= .zero || !extreme.isPositive)
        #expect(!moved.description.isEmpty)
    }

    @MainActor
    @Test(arguments: ExtremeDuration.allCases, TaskContext.allCases)
    func aManualDelayOfAnyLengthIsNeverOrNow(extreme: ExtremeDuration, context: TaskContext) throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.advance(by: .seconds(1))
        let ran = OrderLog()
        let handle =
            switch context {
            case .background: dispatcher.background(after: extreme.duration) { ran.append(1) }
            case .foreground: dispatcher.foreground(after: extreme.duration) { ran.append(1) }
            }
        if extreme.isPositive {
            let task = try #require(dispatcher.pendingTasks.first)
            #expect(task.dueTime == .nanoseconds(Int64.max), "\(task)")
            #expect(task.description.contains("due never"), "\(task)")
            try dispatcher.advance(by: extreme.duration)
            #expect(ran.values.isEmpty)
            #expect(handle.cancel())
        } else {
            try dispatcher.runUntilIdle()
            #expect(ran.values == [1])
        }
        try dispatcher.verifyIdle()
    }

    @Test(arguments: ExtremeDuration.allCases)
    func advanceByAnyDurationStopsAtTheEndOfTheClockOrThrows(extreme: ExtremeDuration) throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.advance(by: .seconds(1))
        if extreme.isPositive {
            try dispatcher.advance(by: extreme.duration)
            #expect(dispatcher.now == .nanoseconds(Int64.max - 1))
            try dispatcher.advance(by: extreme.duration)
            #expect(dispatcher.now == .nanoseconds(Int64.max - 1))
        } else {
            let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.advance(by: extreme.duration) }
            #expect(Self.isClockMovedBackwards(error), "\(String(describing: error))")
            #expect(dispatcher.now == .seconds(1))
        }
    }

    @Test func aMoveBackOfLessThanANanosecondIsRefusedAndSaysHowFar() throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.advance(by: .seconds(1))
        let back = Duration(secondsComponent: 0, attosecondsComponent: -1)
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.advance(by: back) }
        #expect(
            error.summary
                == "advance(by: -1e-18 seconds) would move the clock backwards, from 1 s to 999.999999 ms; virtual time only moves forward. Pass a later time, or a positive duration"
        )
        #expect(throws: ManualDispatcherError.self) { try dispatcher.advance(to: .seconds(1) + back) }
        #expect(dispatcher.now == .seconds(1))
    }

    /// A move back past the clock's range, from any time, names its target as past the range, not as a sum that
    /// stopped at the end of `Int64`.
    @Test(
        arguments: [Duration.seconds(100), .nanoseconds(Int64.max - 1)], [ExtremeDuration.int64MinSeconds, .smallest])
    func aMoveBackPastTheClocksRangeSaysSo(from start: Duration, extreme: ExtremeDuration) throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.advance(to: start)
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.advance(by: extreme.duration) }
        #expect(error.kind == .clockMovedBackwards(from: start, to: .nanoseconds(Int64.min)))
        #expect(error.summary.contains("would move the clock backwards, from "), "\(error)")
        #expect(error.summary.contains(" to -292 years or less; virtual time only moves forward"), "\(error)")
        #expect(dispatcher.now == start)
    }

    @Test func anAsyncMoveBackOfLessThanANanosecondIsRefused() async throws {
        let dispatcher = ManualDispatcher()
        try await dispatcher.advance(by: .seconds(1))
        let back = Duration(secondsComponent: 0, attosecondsComponent: -1)
        await #expect(throws: ManualDispatcherError.self) { try await dispatcher.advance(by: back) }
        await #expect(throws: ManualDispatcherError.self) { try await dispatcher.advance(to: .seconds(1) + back) }
        #expect(dispatcher.now == .seconds(1))
    }

    @Test(arguments: ExtremeDuration.allCases)
    func advanceToAnyTimeStopsAtTheEndOfTheClockOrThrows(extreme: ExtremeDuration) throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.advance(by: .seconds(1))
        if extreme.isPositive {
            try dispatcher.advance(to: extreme.duration)
            #expect(dispatcher.now == .nanoseconds(Int64.max - 1))
        } else {
            let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.advance(to: extreme.duration) }
            #expect(Self.isClockMovedBackwards(error), "\(String(describing: error))")
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: ExtremeDuration.allCases)
    func theAsyncAdvancesAcceptAnyDurationAndAnyLimit(extreme: ExtremeDuration) async throws {
        let dispatcher = ManualDispatcher(waitLimit: expectedWaitLimit)
        try await dispatcher.advance(by: .seconds(1), waitingUpTo: extreme.duration)
        try await dispatcher.advance(to: .seconds(2), waitingUpTo: extreme.duration)
        try await dispatcher.runUntilIdle(waitingUpTo: extreme.duration)
        #expect(dispatcher.now == .seconds(2))
        if extreme.isPositive {
            try await dispatcher.advance(by: extreme.duration)
            #expect(dispatcher.now == .nanoseconds(Int64.max - 1))
            try await dispatcher.advance(to: extreme.duration, waitingUpTo: extreme.duration)
            #expect(dispatcher.now == .nanoseconds(Int64.max - 1))
        } else {
            await #expect(throws: ManualDispatcherError.self) {
                try await dispatcher.advance(by: extreme.duration)
            }
            await #expect(throws: ManualDispatcherError.self) {
                try await dispatcher.advance(to: extreme.duration)
            }
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: ExtremeDuration.allCases)
    func theWaitingStepsAcceptAnyLimit(extreme: ExtremeDuration) async throws {
        let dispatcher = ManualDispatcher()
        let limit = extreme.duration
        dispatcher.background {}
        _ = try await dispatcher.runNextBackground(waitingUpTo: limit)
        dispatcher.background {}
        _ = try await dispatcher.runNext(waitingUpTo: limit)
        dispatcher.background {}
        try await dispatcher.waitForPendingTasks(1, waitingUpTo: limit)
        _ = try await dispatcher.runNextBackground()
        await Self.runForegroundStep(on: dispatcher, waitingUpTo: limit)
        if extreme.isPositive {
            // A huge limit is a long timer; the wait ends when the task it waits for arrives.
            let waiter = Task { try await dispatcher.runNextBackground(waitingUpTo: limit) }
            dispatcher.background(label: "awaited") {}
            #expect(try await waiter.value.task.label == "awaited")
        } else {
            // A negative limit checks once.
            let error = await #expect(throws: ManualDispatcherError.self) {
                try await dispatcher.runNextBackground(waitingUpTo: limit)
            }
            #expect(error.map { "\($0.kind)" }?.hasPrefix("waitTimedOut") == true, "\(String(describing: error))")
        }
        try dispatcher.verifyIdle()
    }

    @Test(.timeLimit(.minutes(1)), arguments: ExtremeDuration.allCases)
    func aDispatchersWaitLimitMayBeAnyDuration(extreme: ExtremeDuration) async throws {
        let dispatcher = ManualDispatcher(waitLimit: extreme.duration)
        #expect(dispatcher.waitLimit == extreme.duration)
        // What the calls wait for has happened already: each returns, whatever the limit.
        dispatcher.background(label: "due") {}
        #expect(try await dispatcher.runNextBackground().task.label == "due")
        let task = dispatcher.startTask(label: "quick") { 1 }
        _ = try await dispatcher.runNextBackground()  // the start
        _ = await task.result  // finished: value(of:) has nothing to wait for
        #expect(try await dispatcher.value(of: task) == 1)
        try await dispatcher.settle()
        try await dispatcher.runUntilIdle()
        if extreme.isPositive {
            // A huge limit is a long timer; the wait ends when the task it waits for arrives.
            let waiter = Task { try await dispatcher.runNextBackground() }
            dispatcher.background(label: "awaited") {}
            #expect(try await waiter.value.task.label == "awaited")
        } else {
            // A negative limit checks once.
            let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.runNextBackground() }
            #expect(error.map { "\($0.kind)" }?.hasPrefix("waitTimedOut") == true, "\(String(describing: error))")
            #expect(error?.summary.contains("due within 0 s of real time") == true, "\(String(describing: error))")
        }
        try dispatcher.verifyIdle()
    }

    @Test(.timeLimit(.minutes(1)), arguments: ExtremeDuration.allCases)
    func settleAcceptsAnyLimit(extreme: ExtremeDuration) async throws {
        let dispatcher = ManualDispatcher(waitLimit: expectedWaitLimit)
        let limit = extreme.duration
        try await dispatcher.settle(waitingUpTo: limit)  // nothing to settle
        // A tracked task that awaits something the dispatcher does not control (here, the test's stream) is not
        // settled until it ends.
        let (values, input) = AsyncStream.makeStream(of: Int.self)
        let reading = ArrivalSignal()
        let reader = dispatcher.startTask(label: "reader") { () async -> Int in
            reading.signal()
            for await value in values { return value }
            return 0
        }
        if extreme.isPositive {
            // A huge limit is a long timer; the settle ends when the task does.
            let settling = Task { try await dispatcher.settle(waitingUpTo: limit) }
            await reading.reach(1)  // the settle ran the start, and waits for the task
            input.yield(5)
            _ = try await settling.value
        } else {
            // A negative limit checks once: the task has not settled.
            let error = await #expect(throws: ManualDispatcherError.self) {
                try await dispatcher.settle(waitingUpTo: limit)
            }
            guard case .unsettledTasks? = error?.kind else {
                Issue.record("expected unsettledTasks, got \(String(describing: error))")
                return
            }
            #expect(error?.summary.contains("\"reader\" started at") == true, "\(String(describing: error))")
            input.yield(5)
        }
        #expect(try await dispatcher.value(of: reader) == 5)
        try dispatcher.verifyIdle()
    }

    // MARK: - AnyDispatcherClock

    @Test(.timeLimit(.minutes(1)), arguments: ExtremeDuration.allCases)
    func anErasedManualClockAcceptsAnyDuration(extreme: ExtremeDuration) async throws {
        let dispatcher = ManualDispatcher(waitLimit: expectedWaitLimit)
        try await dispatcher.advance(by: .seconds(1))
        let clock = AnyDispatcherClock(dispatcher.clock)
        let now = clock.now
        let moved = now.advanced(by: extreme.duration).advanced(by: extreme.duration)
        #expect((moved > now) == extreme.isPositive)
        #expect((moved.duration(to: now) < .zero) == extreme.isPositive)
        let sleeper = Task { try await clock.sleep(for: extreme.duration) }
        try await Self.expectSleep(sleeper, on: dispatcher, neverWakes: extreme.isPositive)
        let deadline = AnyDispatcherClock.Instant(offset: extreme.duration)
        let untilSleeper = Task { try await clock.sleep(until: deadline) }
        try await Self.expectSleep(untilSleeper, on: dispatcher, neverWakes: extreme.isPositive)
    }

    @Test(.timeLimit(.minutes(1)), arguments: ExtremeDuration.allCases)
    func anErasedContinuousClockAcceptsAnyDuration(extreme: ExtremeDuration) async throws {
        let clock = AnyDispatcherClock(ContinuousClock())
        let sleeper = Task { try await clock.sleep(until: AnyDispatcherClock.Instant(offset: extreme.duration)) }
        if extreme.isPositive {
            // A real sleep until the end of time: cancelled rather than waited for.
            sleeper.cancel()
            await #expect(throws: CancellationError.self) { try await sleeper.value }
        } else {
            try await sleeper.value
        }
    }

    @Test(arguments: ExtremeDuration.allCases)
    func anErasedClockHandsItsClockAToleranceTheStandardClocksAccept(extreme: ExtremeDuration) async throws {
        // `ContinuousClock` traps on a tolerance past `Int64.max` seconds, as on such a deadline (found by a probe
        // from a client package): the erased clock passes at most the furthest offset, and no negative tolerance.
        let recording = ToleranceRecordingClock()
        let clock = AnyDispatcherClock(recording)
        try await clock.sleep(until: clock.now.advanced(by: .seconds(1)), tolerance: extreme.duration)
        let passed = try #require(recording.tolerances.last ?? nil)
        #expect(passed >= .zero)
        #expect(passed <= .seconds(Int64(1) << 62))
        #expect(passed == (extreme.isPositive ? min(extreme.duration, .seconds(Int64(1) << 62)) : .zero))
        try await clock.sleep(until: clock.now, tolerance: nil)
        #expect(recording.tolerances.count == 2 && recording.tolerances.last == .some(nil))
    }

    @Test func anErasedContinuousClockSleepsWithTheLargestTolerance() async throws {
        let clock = AnyDispatcherClock(ContinuousClock())
        try await clock.sleep(until: clock.now, tolerance: ExtremeDuration.largest.duration)
    }

    // MARK: - QueueDispatcher and OperationQueueDispatcher

    @MainActor
    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases, ExtremeDuration.positive)
    func aProductionDelayPastAnyClockNeverRuns(kind: ProductionDispatcherKind, extreme: ExtremeDuration) async {
        let dispatcher = kind.makeDispatcher()
        let background = dispatcher.background(after: extreme.duration) { Issue.record("the background task ran") }
        let foreground = dispatcher.foreground(after: extreme.duration) { Issue.record("the foreground task ran") }
        #expect(background.cancel())
        #expect(foreground.cancel())
        #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(50)))
    }

    @MainActor
    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases, ExtremeDuration.negative)
    func aNegativeProductionDelayRunsAtOnce(kind: ProductionDispatcherKind, extreme: ExtremeDuration) async {
        let dispatcher = kind.makeDispatcher()
        await withCheckedContinuation { continuation in
            dispatcher.background(after: extreme.duration) { continuation.resume() }
        }
        await withCheckedContinuation { continuation in
            dispatcher.foreground(after: extreme.duration) { continuation.resume() }
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases, ExtremeDuration.allCases)
    func theShutdownWaitsAcceptAnyTimeout(kind: ProductionDispatcherKind, extreme: ExtremeDuration) async {
        let dispatcher = kind.makeDispatcher()
        let timeout = extreme.duration
        // Nothing outstanding: every wait returns `true` at once, whatever the timeout.
        #expect(await onOwnThread { dispatcher.waitForBackgroundTasks(timeout: timeout) })
        #expect(await dispatcher.waitForBackgroundTasks(timeout: timeout))
        // Work that finishes: a huge timeout saturates, and the wait returns when the work is done.
        if extreme.isPositive {
            for _ in 0..<3 { dispatcher.background {} }
            #expect(await onOwnThread { dispatcher.waitForBackgroundTasks(timeout: timeout) })
            for _ in 0..<3 { dispatcher.background {} }
            #expect(await dispatcher.waitForBackgroundTasks(timeout: timeout))
        } else {
            dispatcher.background {}
            _ = await onOwnThread { dispatcher.waitForBackgroundTasks(timeout: timeout) }
            _ = await dispatcher.waitForBackgroundTasks(timeout: timeout)
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(50)))
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases, ExtremeDuration.positive)
    func aTaskThatNeverRunsDoesNotHoldTheShutdownWait(kind: ProductionDispatcherKind, extreme: ExtremeDuration) async {
        // Before 1.0 a background task delayed past any deadline counted as outstanding, so a shutdown wait without
        // a timeout waited for it for ever.
        let dispatcher = kind.makeDispatcher()
        let never = dispatcher.background(after: extreme.duration, label: "never") {}
        let forever = dispatcher.background(after: .seconds(1_000_000_000), label: "31 years") {}
        #expect(await dispatcher.waitForBackgroundTasks(timeout: .zero))
        #expect(await onOwnThread { dispatcher.waitForBackgroundTasks(timeout: .zero) })
        #expect(await dispatcher.waitForBackgroundTasks(timeout: nil))
        // Just short of that, a task still counts until it runs or is cancelled.
        let late = dispatcher.background(after: .seconds(999_999_999), label: "late") {}
        #expect(await !dispatcher.waitForBackgroundTasks(timeout: .zero))
        #expect(late.cancel())
        #expect(await dispatcher.waitForBackgroundTasks(timeout: .zero))
        #expect(never.cancel())
        #expect(forever.cancel())
    }

    // MARK: - The awaitable dispatches, on all three dispatchers

    @Test(.timeLimit(.minutes(1)), arguments: AwaitedDispatcherKind.allCases, ExtremeDuration.positive)
    func anAwaitedDispatchPastAnyClockNeverRunsAndEndsWithItsCancellation(
        kind: AwaitedDispatcherKind,
        extreme: ExtremeDuration
    ) async throws {
        let dispatcher = SignallingDispatcher(base: kind.makeDispatcher())
        let background = Task {
            try await dispatcher.runInBackground(after: extreme.duration, label: "later") { 1 }
        }
        let foreground = Task {
            try await dispatcher.runOnMainActor(after: extreme.duration, label: "later") { 2 }
        }
        await dispatcher.dispatched.reach(2)  // both dispatched, with their delays; nothing waits for them to pass
        let manual = dispatcher.base as? ManualDispatcher
        if let manual {
            #expect(manual.pendingTasks.map(\.dueTime) == [.nanoseconds(Int64.max), .nanoseconds(Int64.max)])
            try await manual.advance(by: extreme.duration)
            #expect(manual.pendingTaskCount == 2)
        }
        background.cancel()
        foreground.cancel()
        await #expect(throws: CancellationError.self) { try await background.value }
        await #expect(throws: CancellationError.self) { try await foreground.value }
        if let manual {
            #expect(manual.pendingTaskCount == 0)
            try manual.verifyIdle()
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: AwaitedDispatcherKind.allCases, ExtremeDuration.negative)
    func anAwaitedDispatchWithANegativeDelayRunsAtOnce(kind: AwaitedDispatcherKind, extreme: ExtremeDuration)
        async throws
    {
        let dispatcher = kind.makeDispatcher()
        #expect(try await dispatcher.runInBackground(after: extreme.duration) { 1 } == 1)
        #expect(try await dispatcher.runOnMainActor(after: extreme.duration) { 2 } == 2)
    }

    // MARK: - The contract check's limit

    @Test(.timeLimit(.minutes(3)), arguments: [ExtremeDuration.int64MaxSecondsPlusOne, .largest])
    func theContractCheckAcceptsAHugeTimeLimitOnEveryDispatcher(extreme: ExtremeDuration) async throws {
        let limit = extreme.duration
        try await DispatcherContract.check(timeLimitPerRule: limit) { .manual(ManualDispatcher()) }
        try await DispatcherContract.check(timeLimitPerRule: limit) { .realTime(QueueDispatcher()) }
        try await DispatcherContract.check(timeLimitPerRule: limit) { .realTime(OperationQueueDispatcher()) }
    }

    @Test(.timeLimit(.minutes(1)), arguments: ExtremeDuration.negative)
    func theContractCheckAcceptsANegativeTimeLimit(extreme: ExtremeDuration) async throws {
        // No time to wait: the first rule that must wait for something (a real-time task, or an awaited dispatch on
        // either kind of dispatcher) is reported against the time limit, without a trap.
        let subjects: [@Sendable () -> DispatcherContract.Subject] = [
            { .manual(ManualDispatcher()) }, { .realTime(QueueDispatcher()) },
        ]
        for subject in subjects {
            do {
                try await DispatcherContract.check(timeLimitPerRule: extreme.duration, subject)
            } catch let violation as DispatcherContractViolation {
                #expect(violation.evidence.contains("time limit of"), "\(violation)")
            }
        }
    }

    // MARK: - Helpers

    /// Expects `sleeper`, sleeping on `dispatcher`'s clock, either to have dispatched a timer that never falls due
    /// (then cancels it) or to return at once without one.
    private static func expectSleep(
        _ sleeper: Task<Void, any Error>,
        on dispatcher: ManualDispatcher,
        neverWakes: Bool
    ) async throws {
        guard neverWakes else {
            try await sleeper.value
            #expect(dispatcher.pendingTaskCount == 0)
            return
        }
        try await dispatcher.waitForPendingTasks(1)
        let timer = try #require(dispatcher.pendingTasks.first)
        #expect(timer.label == "clock sleep until never", "\(timer)")
        try await dispatcher.advance(by: .seconds(Int64.max))
        #expect(dispatcher.pendingTaskCount == 1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(dispatcher.pendingTaskCount == 0)
    }

    @MainActor
    private static func runForegroundStep(on dispatcher: ManualDispatcher, waitingUpTo limit: Duration) async {
        dispatcher.foreground {}
        #expect(throws: Never.self) { _ = try dispatcher.runNextForeground() }
        dispatcher.foreground {}
        await #expect(throws: Never.self) { _ = try await dispatcher.runNextForeground(waitingUpTo: limit) }
    }

    private static func isClockMovedBackwards(_ error: ManualDispatcherError?) -> Bool {
        guard case .clockMovedBackwards = error?.kind else { return false }
        return true
    }
}

/// A clock whose sleeps return at once, recording the tolerance each was given.
private final class ToleranceRecordingClock: Clock, @unchecked Sendable {
    typealias Duration = Swift.Duration
    typealias Instant = ContinuousClock.Instant

    // Written by the sleeps, which the test awaits one at a time; read after them.
    private(set) var tolerances: [Duration?] = []

    var now: Instant { ContinuousClock().now }
    var minimumResolution: Duration { .nanoseconds(1) }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        self.tolerances.append(tolerance)
    }
}
