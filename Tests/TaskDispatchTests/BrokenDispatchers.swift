import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting

/// Dispatchers that each break one rule of the contract on purpose, to prove that the contract check catches it:
/// the five of issue 13, one that ignores delays, and one whose `cancel()` always claims success.
enum BrokenDispatcher: String, Sendable, CaseIterable, CustomStringConvertible {
    case runsInline
    case runsATaskTwice
    case dropsEvery100thTask
    case runsForegroundWorkOffTheMainThread
    case ignoresCancel
    case ignoresDelays
    case cancelAlwaysSucceeds

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
        }
    }

    func makeDispatcher() -> any TaskDispatcher {
        switch self {
        case .runsInline: InlineDispatcher()
        case .runsATaskTwice: TwiceDispatcher()
        case .dropsEvery100thTask: DroppingDispatcher()
        case .runsForegroundWorkOffTheMainThread: OffMainDispatcher()
        case .ignoresCancel: CancelIgnoringDispatcher()
        case .ignoresDelays: DelayIgnoringDispatcher()
        case .cancelAlwaysSucceeds: AlwaysCancellingDispatcher()
        }
    }
}

/// A canceller for handles whose task the dispatcher no longer controls: cancelling never succeeds.
struct SpentCanceller: TaskCancelling {
    func cancelTask(id: UInt64) -> Bool { false }
    func isTaskCancelled(id: UInt64) -> Bool { false }
}

/// Runs immediate background work on the caller's stack; forwards everything else to a `QueueDispatcher`.
struct InlineDispatcher: TaskDispatcher {
    let base = QueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        guard case .background(let work) = task.work, !task.isDelayed else { return self.base.dispatch(task) }
        work()
        return TaskHandle(id: 0, canceller: SpentCanceller())
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
        return TaskHandle(id: 0, canceller: SpentCanceller())
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
        let claims = ClaimedCancellations()
        func cancelTask(id: UInt64) -> Bool { self.claims.claim(id) }
        func isTaskCancelled(id: UInt64) -> Bool { self.claims.contains(id) }
    }

    let base = QueueDispatcher()
    let canceller = LyingCanceller()
    let count = Counter()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
        return TaskHandle(id: UInt64(self.count.next()), canceller: self.canceller)
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
        func cancelTask(id: UInt64) -> Bool {
            self.base.cancel()
            return true
        }
        func isTaskCancelled(id: UInt64) -> Bool { self.base.isCancelled }
    }

    let base = QueueDispatcher()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        TaskHandle(id: 0, canceller: BoastingCanceller(base: self.base.dispatch(task)))
    }
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
