import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting

/// Dispatchers that each break one rule of the contract on purpose, to prove that the contract check catches it:
/// the five of issue 13, one that ignores delays, one whose `cancel()` always claims success, one whose `cancel()`
/// never does, and decorators over a `ManualDispatcher` that drop the clock, `startTask` or a tracked task's wait.
enum BrokenDispatcher: String, Sendable, CaseIterable, CustomStringConvertible {
    case runsInline
    case runsATaskTwice
    case dropsEvery100thTask
    case runsForegroundWorkOffTheMainThread
    case ignoresCancel
    case ignoresDelays
    case cancelAlwaysSucceeds
    case cancelNeverSucceeds
    case decoratorDropsTheClock
    case decoratorSleepsPastTheDeadline
    case decoratorDropsStartTask
    case decoratorDropsTheWait
    case dropsTheWholeSecondsOfADelay
    case truncatesDelaysToWholeMilliseconds
    case runsPendingWorkInALaterDispatch
    case runsEachTaskAgainLater
    case capsLongDelays
    case holdsEveryTaskForThirtyYears

    var description: String { self.rawValue }

    /// The rule this dispatcher breaks.
    var brokenRule: DispatcherContract.Rule {
        switch self {
        case .runsInline: .neverInline
        case .runsATaskTwice: .exactlyOnce
        case .dropsEvery100thTask: .exactlyOnce
        case .runsForegroundWorkOffTheMainThread: .foregroundOnMainActorInOrder
        case .ignoresCancel: .cancellationIsAllOrNothing
        case .ignoresDelays: .delayIsLowerBound
        case .cancelAlwaysSucceeds: .cancellationIsAllOrNothing
        case .cancelNeverSucceeds: .cancelBeforeTheStartStopsTheTask
        case .decoratorDropsTheClock: .decoratorForwardsTheClock
        case .decoratorSleepsPastTheDeadline: .decoratorForwardsTheClock
        case .decoratorDropsStartTask: .decoratorForwardsStartTask
        case .decoratorDropsTheWait: .decoratorKeepsAwaitedWaits
        case .dropsTheWholeSecondsOfADelay: .delayIsLowerBound
        case .truncatesDelaysToWholeMilliseconds: .delayIsLowerBound
        case .runsPendingWorkInALaterDispatch: .neverInline
        case .runsEachTaskAgainLater: .exactlyOnce
        case .capsLongDelays: .delayIsLowerBound
        case .holdsEveryTaskForThirtyYears: .exactlyOnce
        }
    }

    /// A phrase the violation's evidence must contain.
    var evidence: String {
        switch self {
        case .runsInline: "ran inline, inside dispatch(_:)"
        case .runsATaskTwice: "ran 2 times"
        case .dropsEvery100thTask: "never ran within"
        case .runsForegroundWorkOffTheMainThread: "ran off the main actor"
        case .ignoresCancel: "ran although cancel() had returned true"
        case .ignoresDelays: "before its delay had passed"
        case .cancelAlwaysSucceeds: "cancel() returned true twice"
        case .cancelNeverSucceeds: "cancel() returned false for"
        case .decoratorDropsTheClock: "put no timer on the ManualDispatcher underneath"
        case .decoratorSleepsPastTheDeadline: "its timer is still pending there, due at 7200 s"
        case .decoratorDropsStartTask: "it is a plain Task"
        case .decoratorDropsTheWait: "did not read as waiting on the ManualDispatcher's own work"
        case .dropsTheWholeSecondsOfADelay: "before its delay had passed"
        case .truncatesDelaysToWholeMilliseconds: "before its delay had passed"
        case .runsPendingWorkInALaterDispatch: "ran inline, inside dispatch(_:)"
        case .runsEachTaskAgainLater: "ran 2 times"
        case .capsLongDelays: "before its delay had passed"
        case .holdsEveryTaskForThirtyYears: "never ran within"
        }
    }

    /// The check's bound on each rule's waits: room for a starved machine (a sanitizer run beside the stress suites
    /// held a passing rule for over 10 s), less where the violation is a task that never runs, which waits it out.
    var timeLimitPerRule: Duration {
        self.evidence == "never ran within" ? .seconds(30) : .seconds(60)
    }

    /// The subject to check: the dispatcher in real time, or the decorator over a fresh `ManualDispatcher`.
    func makeSubject() -> DispatcherContract.Subject {
        let manual = ManualDispatcher()
        switch self {
        case .decoratorDropsTheClock: return .manual(ClockDroppingDecorator(base: manual), over: manual)
        case .decoratorSleepsPastTheDeadline:
            return .manual(ClockBendingDecorator(manual: manual, bend: .asksForAnHourLater), over: manual)
        case .decoratorDropsStartTask: return .manual(StartTaskDroppingDecorator(base: manual), over: manual)
        case .decoratorDropsTheWait: return .manual(WaitDroppingDecorator(base: manual), over: manual)
        // On the virtual clock, where the half millisecond it drops always shows (found by a probe).
        case .truncatesDelaysToWholeMilliseconds:
            return .manual(RewritingDecorator.truncatingDelaysToWholeMilliseconds(base: manual), over: manual)
        // On the virtual clock, where the check can reach a run seconds later, or a delay of an hour (found by a
        // probe: both passed, in real time and over a ManualDispatcher).
        case .runsEachTaskAgainLater:
            return .manual(RewritingDecorator.runningEachTaskAgainLater(base: manual), over: manual)
        case .capsLongDelays: return .manual(RewritingDecorator.cappingDelays(base: manual), over: manual)
        // The check runs what the ManualDispatcher holds for a day more of its clock, not for ever (a review).
        case .holdsEveryTaskForThirtyYears:
            return .manual(RewritingDecorator.delaying(base: manual, by: .seconds(1_000_000_000)), over: manual)
        default: return .realTime(self.makeDispatcher())
        }
    }

    func makeDispatcher() -> any TaskDispatcher {
        switch self {
        case .dropsTheWholeSecondsOfADelay: WholeSecondsDroppingDispatcher()
        case .truncatesDelaysToWholeMilliseconds:
            RewritingDecorator.truncatingDelaysToWholeMilliseconds(base: ManualDispatcher())
        case .runsPendingWorkInALaterDispatch: TrampolineDispatcher()
        case .runsEachTaskAgainLater: RewritingDecorator.runningEachTaskAgainLater(base: ManualDispatcher())
        case .capsLongDelays: RewritingDecorator.cappingDelays(base: ManualDispatcher())
        case .holdsEveryTaskForThirtyYears:
            RewritingDecorator.delaying(base: ManualDispatcher(), by: .seconds(1_000_000_000))
        case .runsInline: InlineDispatcher()
        case .runsATaskTwice: TwiceDispatcher()
        case .dropsEvery100thTask: DroppingDispatcher()
        case .runsForegroundWorkOffTheMainThread: OffMainDispatcher()
        case .ignoresCancel: CancelIgnoringDispatcher()
        case .ignoresDelays: DelayIgnoringDispatcher()
        case .cancelAlwaysSucceeds: AlwaysCancellingDispatcher()
        case .cancelNeverSucceeds: CancelRefusingDispatcher()
        case .decoratorDropsTheClock: ClockDroppingDecorator(base: ManualDispatcher())
        case .decoratorSleepsPastTheDeadline:
            ClockBendingDecorator(manual: ManualDispatcher(), bend: .asksForAnHourLater)
        case .decoratorDropsStartTask: StartTaskDroppingDecorator(base: ManualDispatcher())
        case .decoratorDropsTheWait: WaitDroppingDecorator(base: ManualDispatcher())
        }
    }
}

/// A canceller for handles whose task the dispatcher no longer controls: cancelling never succeeds.
struct SpentCanceller: TaskCancelling {
    func cancelTask() -> Bool { false }
    var isTaskCancelled: Bool { false }
}

/// Runs immediate background work on the caller's stack; forwards everything else to a `QueueDispatcher`.
struct InlineDispatcher: TaskDispatcher {
    let base = QueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        guard case .background(let work) = task.work, !task.isDelayed else { return self.base.dispatch(task) }
        work()
        return TaskHandle(canceller: SpentCanceller())
    }
}

/// Runs immediate background work on a thread of its own and waits until it has run before `dispatch` returns: not
/// on the caller's stack, but the caller is held all the same. Forwards everything else to a `QueueDispatcher`.
/// (Its own threads, so that the check's wait in vain blocks no thread that other tests share.)
struct TaskWaitingDispatcher: TaskDispatcher {
    let base = QueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        guard case .background(let work) = task.work, !task.isDelayed else { return self.base.dispatch(task) }
        let ran = DispatchSemaphore(value: 0)
        Thread {
            work()
            ran.signal()
        }.start()
        ran.wait()
        return TaskHandle(canceller: SpentCanceller())
    }
}

/// A decorator of `base` that forwards `startTask` to it, as every decorator must.
protocol StartTaskForwarding: TaskDispatcher {
    var base: any TaskDispatcher { get }
}

extension StartTaskForwarding {
    func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        self.base.startTask(label: label, callSite: callSite, operation: operation)
    }
}

/// Forwards to a `QueueDispatcher` with each delay cut to its fraction of a second: the bug of a conversion that
/// reads only `components.attoseconds`.
struct WholeSecondsDroppingDispatcher: TaskDispatcher {
    let base = QueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        var cut = task
        cut.delay = Duration(secondsComponent: 0, attosecondsComponent: task.delay.components.attoseconds)
        return self.base.dispatch(cut)
    }
}

/// Hands every task to a `QueueDispatcher` twice.
struct TwiceDispatcher: TaskDispatcher {
    let base = QueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
        return self.base.dispatch(task)
    }
}

/// Forwards to a `QueueDispatcher`, except every 100th task, which it drops.
final class DroppingDispatcher: TaskDispatcher {
    private let base = QueueDispatcher()
    private let count = Counter()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        guard self.count.next() % 100 == 99 else { return self.base.dispatch(task) }
        return TaskHandle(canceller: SpentCanceller())
    }
}

/// Runs foreground work on a global queue, stripping its main-actor isolation.
struct OffMainDispatcher: TaskDispatcher {
    let base = QueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        guard case .foreground(let work) = task.work else { return self.base.dispatch(task) }
        // The bug on purpose: the closure's isolation is cast away, so it runs on whichever thread calls it.
        let stripped = unsafeBitCast(work, to: (@Sendable () -> Void).self)
        let background = DispatchedTask(
            .background(stripped), label: task.label, delay: task.delay, callSite: task.callSite)
        return self.base.dispatch(background)
    }
}

/// Forwards to a `QueueDispatcher`, but its handles claim to cancel without cancelling anything.
struct CancelIgnoringDispatcher: TaskDispatcher {
    struct LyingCanceller: TaskCancelling {
        let claims: ClaimedCancellations
        let id: UInt64
        func cancelTask() -> Bool { self.claims.claim(self.id) }
        var isTaskCancelled: Bool { self.claims.contains(self.id) }
    }

    let base = QueueDispatcher()
    let claims = ClaimedCancellations()
    let count = Counter()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
        return TaskHandle(canceller: LyingCanceller(claims: self.claims, id: UInt64(self.count.next())))
    }
}

/// Forwards to a `QueueDispatcher` with every delay dropped.
struct DelayIgnoringDispatcher: TaskDispatcher {
    let base = QueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        var now = task
        now.delay = .zero
        return self.base.dispatch(now)
    }
}

/// Forwards to a `QueueDispatcher` and cancels through it, but its `cancel()` always claims success.
struct AlwaysCancellingDispatcher: TaskDispatcher {
    struct BoastingCanceller: TaskCancelling {
        let base: TaskHandle
        func cancelTask() -> Bool {
            self.base.cancel()
            return true
        }
        var isTaskCancelled: Bool { self.base.isCancelled }
    }

    let base = QueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        TaskHandle(canceller: BoastingCanceller(base: self.base.dispatch(task)))
    }
}

/// Forwards to a `QueueDispatcher`, but its handles' `cancel()` returns `false` and stops nothing.
struct CancelRefusingDispatcher: TaskDispatcher {
    let base = QueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
        return TaskHandle(canceller: SpentCanceller())
    }
}

/// Forwards `startTask` and every task, but not the clock: a sleep through it waits in real time.
struct ClockDroppingDecorator: StartTaskForwarding {
    let base: any TaskDispatcher

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
    }
}

/// Forwards the clock and every task, but not `startTask`: its tasks are plain `Task`s.
struct StartTaskDroppingDecorator: TaskDispatcher {
    let base: any TaskDispatcher
    let clock: AnyDispatcherClock

    init(base: any TaskDispatcher) {
        self.base = base
        self.clock = AnyDispatcherClock(base.clock)
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
    }
}

/// Forwards the clock and `startTask`, and each task from a queue of its own (waiting there for the handle), so the
/// dispatch runs outside the awaiting task and a tracked task's wait is lost.
struct WaitDroppingDecorator: StartTaskForwarding {
    let base: any TaskDispatcher
    let clock: AnyDispatcherClock
    private let queue = DispatchQueue(label: "WaitDroppingDecorator")

    init(base: any TaskDispatcher) {
        self.base = base
        self.clock = AnyDispatcherClock(base.clock)
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let handle = HandleBox()
        let done = DispatchSemaphore(value: 0)
        self.queue.async {
            handle.set(self.base.dispatch(task))
            done.signal()
        }
        done.wait()
        return handle.get() ?? TaskHandle(canceller: SpentCanceller())
    }
}

/// Forwards the clock and `startTask`, and each task ten seconds after its `dispatch(_:)` returned, from a queue of
/// its own: a test's drains run before the task reaches the dispatcher underneath.
struct LateForwardingDecorator: StartTaskForwarding {
    let base: any TaskDispatcher

    var clock: AnyDispatcherClock { AnyDispatcherClock(self.base.clock) }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        DispatchQueue.global().asyncAfter(deadline: .now() + 10) { self.base.dispatch(task) }
        return TaskHandle(canceller: SpentCanceller())
    }
}

/// A handle passed from one thread to another. `@unchecked Sendable`: `lock` guards `handle`.
final class HandleBox: @unchecked Sendable {
    private let lock = NSLock()
    private var handle: TaskHandle?

    func set(_ handle: TaskHandle) { self.lock.withLock { self.handle = handle } }
    func get() -> TaskHandle? { self.lock.withLock { self.handle } }
}

/// A thread-safe counter. `@unchecked Sendable`: `lock` guards `value`.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
        self.lock.withLock {
            defer { self.value += 1 }
            return self.value
        }
    }
}

/// The identifiers a lying canceller has claimed to cancel. `@unchecked Sendable`: `lock` guards `ids`.
final class ClaimedCancellations: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: Set<UInt64> = []

    func claim(_ id: UInt64) -> Bool { self.lock.withLock { self.ids.insert(id).inserted } }
    func contains(_ id: UInt64) -> Bool { self.lock.withLock { self.ids.contains(id) } }
}

/// Runs each immediate task in a `Task { }` (background work in a plain task, foreground work in a main-actor one),
/// and forwards delayed tasks to a `QueueDispatcher`. It keeps the "never inline" rule: a task never runs on the
/// caller's stack, though it inherits the caller's task-local values.
struct TaskHoppingDispatcher: TaskDispatcher {
    let base = QueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        guard !task.isDelayed else { return self.base.dispatch(task) }
        switch task.work {
        case .background(let work): Task { work() }
        case .foreground(let work): Task { @MainActor in work() }
        }
        return TaskHandle(canceller: SpentCanceller())
    }
}

/// Holds each immediate background task until the next dispatch call, which runs it on its caller's stack before
/// holding the new one; a timer runs what is left. Forwards everything else to a `QueueDispatcher`.
final class TrampolineDispatcher: TaskDispatcher, @unchecked Sendable {
    private let lock = NSLock()
    private var held: [@Sendable () -> Void] = []
    private let base = QueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        guard case .background(let work) = task.work, !task.isDelayed else { return self.base.dispatch(task) }
        let previous = self.lock.withLock { () -> [@Sendable () -> Void] in
            defer { self.held = [work] }
            return self.held
        }
        for held in previous { held() }  // the bug on purpose: inside this call, on the caller's stack
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { [self] in
            let left = self.lock.withLock { () -> [@Sendable () -> Void] in
                defer { self.held = [] }
                return self.held
            }
            for held in left { held() }
        }
        return TaskHandle(canceller: SpentCanceller())
    }
}

/// A decorator that forwards the clock and `startTask`, and hands each task to `rewrite` with the dispatcher
/// underneath: the decorators below differ only in what they do to a task.
struct RewritingDecorator: StartTaskForwarding {
    let base: any TaskDispatcher
    let clock: AnyDispatcherClock
    let rewrite: @Sendable (DispatchedTask, any TaskDispatcher) -> TaskHandle

    init(base: any TaskDispatcher, rewrite: @escaping @Sendable (DispatchedTask, any TaskDispatcher) -> TaskHandle) {
        self.base = base
        self.clock = AnyDispatcherClock(base.clock)
        self.rewrite = rewrite
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.rewrite(task, self.base)
    }

    /// Each delay rounded down to whole milliseconds: a conversion to a millisecond timer API that drops the rest.
    static func truncatingDelaysToWholeMilliseconds(base: any TaskDispatcher) -> Self {
        Self(base: base) { task, base in
            var cut = task
            let (seconds, attoseconds) = task.delay.components
            cut.delay = .seconds(seconds) + .milliseconds(attoseconds / 1_000_000_000_000_000)
            return base.dispatch(cut)
        }
    }

    /// Every task, and the same task again two seconds later: a retry layer that retries work that succeeded.
    static func runningEachTaskAgainLater(base: any TaskDispatcher) -> Self {
        Self(base: base) { task, base in
            var again = task
            again.delay = Swift.max(task.delay, .zero) + .seconds(2)
            _ = base.dispatch(again)
            return base.dispatch(task)
        }
    }

    /// Each delay cut to two seconds at most: a timer API with a ceiling.
    static func cappingDelays(base: any TaskDispatcher) -> Self {
        Self(base: base) { task, base in
            var capped = task
            capped.delay = Swift.min(task.delay, .seconds(2))
            return base.dispatch(capped)
        }
    }

    /// Every task `extra` later than asked: with ten milliseconds, a correct decorator (a delay is a lower bound),
    /// which the check over a `ManualDispatcher` once reported as losing every task (found by a probe); with thirty
    /// years, one whose tasks never run in practice.
    static func delaying(base: any TaskDispatcher, by extra: Duration = .milliseconds(10)) -> Self {
        Self(base: base) { task, base in
            var later = task
            later.delay = Swift.max(task.delay, .zero) + extra
            return base.dispatch(later)
        }
    }
}

/// Forwards `startTask` and every task, and the clock of the `ManualDispatcher` underneath, bent: its sleep either
/// waits an hour more in real time once the base has woken it (a sleep that returns too late, on the right clock:
/// the check cannot tell it from a busy machine), or asks the base for an hour past its deadline (a conversion bug).
struct ClockBendingDecorator: StartTaskForwarding {
    enum Bend: Sendable { case wakesAnHourLateInRealTime, asksForAnHourLater }

    struct BentClock: Clock {
        let base: ManualDispatcher.Clock
        let bend: Bend
        var now: ManualDispatcher.Clock.Instant { self.base.now }
        var minimumResolution: Duration { self.base.minimumResolution }

        func sleep(until deadline: ManualDispatcher.Clock.Instant, tolerance: Duration?) async throws {
            switch self.bend {
            case .wakesAnHourLateInRealTime:
                try await self.base.sleep(until: deadline, tolerance: tolerance)
                try await ContinuousClock().sleep(for: .seconds(3_600))
            case .asksForAnHourLater:
                try await self.base.sleep(until: deadline.advanced(by: .seconds(3_600)), tolerance: tolerance)
            }
        }
    }

    let manual: ManualDispatcher
    let bend: Bend
    var base: any TaskDispatcher { self.manual }
    var clock: BentClock { BentClock(base: self.manual.clock, bend: self.bend) }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.manual.dispatch(task)
    }
}
