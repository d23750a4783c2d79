import Dispatch
import Synchronization

/// Counts the background tasks a production dispatcher accepted that have neither finished nor been cancelled
/// (from acceptance until the work returns or the cancel succeeds), and wakes whoever waits for zero. One atomic add
/// and subtract per task (``OutstandingWorkCounter``); the waiters' lock is taken only by waiters, and by a task that
/// brings the count to zero while someone waits.
///
/// Tasks hold their tracker `unowned(unsafe)` (two contended reference-count operations fewer per task); the tracker
/// keeps itself alive while the count is above zero (retained by the task that raises it from zero, released by the
/// one that brings it back). Sound because only a dispatch raises the count, in the task's initializer, while its
/// caller holds the dispatcher and so the tracker. A waiter is woken only while the count is zero; work that arrives
/// before the wake-up makes it wait for the next zero (or its timeout).
final class BackgroundWorkTracker: Sendable {
    private enum Waiter {
        case thread(DispatchSemaphore)
        case task(CheckedContinuation<Bool, Never>)

        func resume(finished: Bool) {
            switch self {
            case .thread(let semaphore): semaphore.signal()
            case .task(let continuation): continuation.resume(returning: finished)
            }
        }
    }

    private struct Waiters {
        var nextID: UInt64 = 0
        var waiting: [UInt64: Waiter] = [:]

        mutating func makeID() -> UInt64 {
            self.nextID &+= 1
            return self.nextID
        }
    }

    #if canImport(Darwin)
        // `Atomic` needs macOS 15 / iOS 18: chosen at run time.
        private let counter: any OutstandingWorkCounter
    #else
        // Concrete where `Atomic` has no availability floor: the count's add and subtract inline, with no witness
        // call and no retain around one.
        private let counter = AtomicOutstandingWorkCounter()
    #endif
    private let waiters = LockedValue(Waiters())

    init() {
        #if canImport(Darwin)
            if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
                self.counter = AtomicOutstandingWorkCounter()
            } else {
                self.counter = LockedOutstandingWorkCounter()
            }
        #endif
    }

    /// Counts one more outstanding task. Call only from the task's initializer, with the dispatcher held.
    @inline(__always)
    func taskAccepted() {
        if self.counter.incrementLeavingZero() {
            _ = Unmanaged.passUnretained(self).retain()
        }
    }

    /// Counts one task less; wakes the waiters if that was the last one. The caller must not use the tracker
    /// afterwards (this call may release it).
    @inline(__always)
    func taskEnded() {
        switch self.counter.decrement() {
        case .stillOutstanding:
            return
        case .reachedZero:
            Unmanaged.passUnretained(self).release()
        case .reachedZeroWhileWaited:
            self.wakeWaitersIfIdle()
            Unmanaged.passUnretained(self).release()
        }
    }

    /// Blocks the calling thread until the count is zero or `timeout` passes.
    ///
    /// - Returns: `true` if the count reached zero, `false` if the timeout passed first.
    func wait(timeout: Duration) -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        guard let id = self.register(.thread(semaphore), cancelledIfTaskIsCancelled: false) else { return true }
        if semaphore.wait(timeout: timeout.dispatchDeadline) == .success { return true }
        // Timed out, unless a wake-up took the waiter off the list in the meantime: then it counts as woken.
        return self.remove(id) == nil
    }

    /// Suspends until the count is zero, `timeout` passes, or the calling task is cancelled. Blocks no thread.
    ///
    /// - Parameter timeout: How long to wait at most; `nil` waits without a limit.
    /// - Returns: `true` if the count reached zero, `false` if the timeout passed or the task was cancelled.
    func finished(timeout: Duration?) async -> Bool {
        let id = self.waiters.withLock { $0.makeID() }
        let finished = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                guard self.register(.task(continuation), id: id, cancelledIfTaskIsCancelled: true) else { return }
                if let timeout {
                    DispatchQueue.global().asyncAfter(deadline: timeout.dispatchDeadline) {
                        self.remove(id)?.resume(finished: false)
                    }
                }
            }
        } onCancel: {
            // If the waiter has not registered yet, registering sees `Task.isCancelled` (set before this handler
            // runs) under the same lock, and does not wait.
            self.remove(id)?.resume(finished: false)
        }
        // The lock, which the task that woke this waiter took after its work, orders that work before the caller's
        // next reads for the thread sanitizer, which on Linux does not see the continuation's resume as doing so.
        self.waiters.withLock { _ in }
        return finished
    }

    /// Adds `waiter` to the list unless the count is already zero; returns its identifier, or `nil` when the
    /// count was zero (the waiter was not added and need not wait).
    private func register(_ waiter: Waiter, cancelledIfTaskIsCancelled: Bool) -> UInt64? {
        let id = self.waiters.withLock { $0.makeID() }
        return self.register(waiter, id: id, cancelledIfTaskIsCancelled: cancelledIfTaskIsCancelled) ? id : nil
    }

    /// Adds `waiter` under `id` and returns `true`, or resumes it at once and returns `false` when the count is
    /// zero (with `true`) or the task it belongs to was cancelled already (with `false`).
    private func register(_ waiter: Waiter, id: UInt64, cancelledIfTaskIsCancelled: Bool) -> Bool {
        enum Outcome { case waits, finished, cancelled }
        let outcome = self.waiters.withLock { waiters -> Outcome in
            if cancelledIfTaskIsCancelled && Task.isCancelled { return .cancelled }
            // Set "someone waits" and read the count in one atomic step: a task that brings the count to zero
            // afterwards sees the flag and wakes the list.
            guard self.counter.markWaitedReturningIsZero() else {
                waiters.waiting[id] = waiter
                return .waits
            }
            if waiters.waiting.isEmpty { self.counter.clearWaited() }
            return .finished
        }
        switch outcome {
        case .waits:
            return true
        case .finished:
            if case .task = waiter { waiter.resume(finished: true) }
            return false
        case .cancelled:
            waiter.resume(finished: false)
            return false
        }
    }

    /// Takes waiter `id` off the list; `nil` if a wake-up (or a cancel) took it first.
    private func remove(_ id: UInt64) -> Waiter? {
        self.waiters.withLock { waiters in
            let waiter = waiters.waiting.removeValue(forKey: id)
            if waiters.waiting.isEmpty { self.counter.clearWaited() }
            return waiter
        }
    }

    private func wakeWaitersIfIdle() {
        let woken = self.waiters.withLock { waiters -> [Waiter] in
            guard self.counter.isZero, !waiters.waiting.isEmpty else { return [] }
            let woken = Array(waiters.waiting.values)
            waiters.waiting.removeAll()
            self.counter.clearWaited()
            return woken
        }
        for waiter in woken { waiter.resume(finished: true) }
    }
}

/// The count of outstanding background tasks and a "someone waits" flag, in one word: a waiter sets the flag and
/// reads the count in one read-modify-write, a finishing task lowers the count and reads the flag in another, so
/// either the task sees the flag and wakes the list, or the waiter sees zero and does not wait. The flag is cleared
/// only under the waiters' lock, when the list is empty.
protocol OutstandingWorkCounter: AnyObject, Sendable {
    /// Raises the count by one; returns whether it was zero.
    func incrementLeavingZero() -> Bool
    /// Lowers the count by one, and says whether it reached zero and whether the flag said someone waits.
    func decrement() -> CountAfterDecrement
    /// Whether the count is zero.
    var isZero: Bool { get }
    /// Sets the flag; returns whether the count is zero at that moment.
    func markWaitedReturningIsZero() -> Bool
    /// Clears the flag. Call under the waiters' lock, when no waiter is left.
    func clearWaited()
}

/// What lowering the count of outstanding work led to.
enum CountAfterDecrement {
    case stillOutstanding
    case reachedZero
    case reachedZeroWhileWaited
}

/// The count and the flag in one `Atomic<Int>`: bit 0 is the flag, the count is in units of 2.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
final class AtomicOutstandingWorkCounter: OutstandingWorkCounter {
    private static let waitedFlag = 1
    private static let one = 2
    private let word = Atomic<Int>(0)

    init() {}

    func incrementLeavingZero() -> Bool {
        let old = self.word.wrappingAdd(Self.one, ordering: .acquiringAndReleasing).oldValue
        return old & ~Self.waitedFlag == 0
    }

    func decrement() -> CountAfterDecrement {
        switch self.word.wrappingSubtract(Self.one, ordering: .acquiringAndReleasing).newValue {
        case 0: .reachedZero
        case Self.waitedFlag: .reachedZeroWhileWaited
        default: .stillOutstanding
        }
    }

    var isZero: Bool {
        self.word.load(ordering: .acquiring) & ~Self.waitedFlag == 0
    }

    func markWaitedReturningIsZero() -> Bool {
        let new = self.word.bitwiseOr(Self.waitedFlag, ordering: .acquiringAndReleasing).newValue
        return new & ~Self.waitedFlag == 0
    }

    func clearWaited() {
        self.word.bitwiseAnd(~Self.waitedFlag, ordering: .acquiringAndReleasing)
    }
}

/// The count behind the package's lock, for systems without `Synchronization.Atomic`.
final class LockedOutstandingWorkCounter: OutstandingWorkCounter {
    private struct State {
        var count = 0
        var isWaited = false
    }

    private let state = LockedValue(State())

    init() {}

    func incrementLeavingZero() -> Bool {
        self.state.withLock { state in
            state.count += 1
            return state.count == 1
        }
    }

    func decrement() -> CountAfterDecrement {
        self.state.withLock { state in
            state.count -= 1
            guard state.count == 0 else { return .stillOutstanding }
            return state.isWaited ? .reachedZeroWhileWaited : .reachedZero
        }
    }

    var isZero: Bool {
        self.state.withLock { $0.count == 0 }
    }

    func markWaitedReturningIsZero() -> Bool {
        self.state.withLock { state in
            state.isWaited = true
            return state.count == 0
        }
    }

    func clearWaited() {
        self.state.withLock { $0.isWaited = false }
    }
}
