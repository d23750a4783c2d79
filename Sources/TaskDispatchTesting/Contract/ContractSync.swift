import Dispatch
import TaskDispatch

// The contract check's state shared across threads, and its waits: the only code of the check that locks.

/// A value that arrives once, from any thread, and one wait for it bounded in real time; as ``ContractFlag``, a flag.
///
/// The wait never blocks a thread: it suspends on a continuation that ``fulfil(_:)`` or a timer on a global queue
/// resumes, whichever comes first.
final class ContractSignal<Value: Sendable>: Sendable {
    private let state = LockedValue<(value: Value?, waiter: CheckedContinuation<Value?, Never>?)>((nil, nil))

    /// The value, once it has arrived.
    var value: Value? {
        self.state.withLock { $0.value }
    }

    /// Delivers `value`; later calls do nothing.
    func fulfil(_ value: Value) {
        self.resumeWaiter(with: value)
    }

    /// Suspends until the value arrives or `deadline` passes in real time; call once.
    ///
    /// - Returns: The value, or `nil` if the deadline passed first.
    func wait(until deadline: ContinuousClock.Instant) async -> Value? {
        await withCheckedContinuation { continuation in
            let arrived = self.state.withLock { state -> Value? in
                if state.value == nil { state.waiter = continuation }
                return state.value
            }
            if let arrived { return continuation.resume(returning: arrived) }
            DispatchQueue.global().asyncAfter(deadline: (deadline - ContinuousClock.now).dispatchDeadline) {
                self.resumeWaiter(with: nil)
            }
        }
    }

    /// Resumes the wait with `value`, kept unless one arrived first; `nil` when the deadline passed.
    private func resumeWaiter(with value: Value?) {
        let waiter = self.state.withLock { state -> CheckedContinuation<Value?, Never>? in
            if value != nil {
                guard state.value == nil else { return nil }
                state.value = value
            }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }
}

/// A flag set once, from any thread.
typealias ContractFlag = ContractSignal<Void>

extension ContractSignal where Value == Void {
    func set() { self.fulfil(()) }
    var isSet: Bool { self.value != nil }
}

/// Cancels a Swift task once it is known, or as soon as it is: the closure that asks may run before the code that
/// created the task has stored it.
struct TaskCancelRequest: Sendable {
    private let requested = ContractFlag()
    private let cancelTask = ContractSignal<@Sendable () -> Void>()

    /// Stores how to cancel the task; cancels it at once if that was already asked.
    func hold(_ cancel: @escaping @Sendable () -> Void) {
        self.cancelTask.fulfil(cancel)
        if self.requested.isSet { cancel() }
    }

    /// Cancels the task, now or when it is stored (in a race, both: cancelling a task twice does nothing more).
    func cancel() {
        self.requested.set()
        self.cancelTask.value?()
    }
}

/// Times recorded by closures that may run on any thread, in the order they were recorded.
final class ContractTimes: Sendable {
    private let times = LockedValue<[Duration]>([])

    /// Records `time`; returns how many times are recorded now.
    func append(_ time: Duration) -> Int {
        self.times.withLock {
            $0.append(time)
            return $0.count
        }
    }

    /// The times recorded so far.
    var all: [Duration] { self.times.withLock { $0 } }
}

/// The `dispatch(_:)` calls of one contract check in progress, by thread.
///
/// A task that starts on a thread while one of the check's calls is in progress there runs on the caller's stack:
/// the thread is busy with the call until it returns. (A task-local marker would not do: a dispatcher that runs
/// its work in a `Task { }` passes it on, and such a task never runs on the caller's stack.)
final class DispatchCallsInProgress: Sendable {
    private let depths = LockedValue<[UInt: Int]>([:])

    /// Makes the call `body` on this thread, as one in progress.
    func call<Result>(_ body: () -> Result) -> Result {
        let thread = currentThreadIdentity()
        self.changeDepth(of: thread, by: 1)
        defer { self.changeDepth(of: thread, by: -1) }
        return body()
    }

    /// Whether the current code runs inside one of the calls, on the caller's stack.
    var containCurrentCode: Bool {
        let thread = currentThreadIdentity()
        return self.depths.withLock { $0[thread] != nil }
    }

    private func changeDepth(of thread: UInt, by change: Int) {
        self.depths.withLock { depths in
            let depth = depths[thread, default: 0] + change
            depths[thread] = depth == 0 ? nil : depth
        }
    }
}

/// One `dispatch(_:)` call of the contract check, which a task may wait to see return.
final class DispatchCall: Sendable {
    private let returnedSignal = DispatchSemaphore(value: 0)

    /// The call has returned.
    func returned() {
        self.returnedSignal.signal()
    }

    /// Blocks until the call has returned, or `timeout` passes; returns whether it returned.
    func waitForReturn(timeout: Duration) -> Bool {
        self.returnedSignal.wait(timeout: timeout.dispatchDeadline) == .success
    }
}

/// What the tasks of one rule's check record, from any thread (``ContractTask``, ``ContractRun``), and a wait for
/// their starts bounded in real time.
final class ContractLog: Sendable {
    private struct State: Sendable {
        var tasks: [ContractTask] = []
        var runs: [ContractRun] = []
        var runCounts: [Int] = []
        /// The tasks the current wait is for that have not started yet, and the signal that ends the wait.
        var awaited: Set<Int> = []
        var allStarted: ContractFlag?
    }

    private let state = LockedValue(State())

    /// What the log holds now, read in one piece.
    private var current: State {
        self.state.withLock { $0 }
    }

    var tasks: [ContractTask] { self.current.tasks }
    var runs: [ContractRun] { self.current.runs }
    var runCounts: [Int] { self.current.runCounts }

    /// Adds a task description and returns its number.
    func add(_ task: ContractTask) -> Int {
        self.state.withLock { state in
            state.tasks.append(task)
            state.runCounts.append(0)
            return state.tasks.count - 1
        }
    }

    /// Records a start of a task; ends the wait when it was the last task awaited.
    func record(_ run: ContractRun) {
        let allStarted = self.state.withLock { state -> ContractFlag? in
            state.runs.append(run)
            state.runCounts[run.task] += 1
            guard state.awaited.remove(run.task) != nil, state.awaited.isEmpty else { return nil }
            return state.allStarted
        }
        allStarted?.set()
    }

    /// Suspends until every task in `indices` has started at least once, or `deadline` passes in real time.
    ///
    /// - Returns: `true` if they all started, `false` if the deadline passed first.
    func waitForStarts(of indices: [Int], until deadline: ContinuousClock.Instant) async -> Bool {
        let allStarted = self.state.withLock { state -> ContractFlag? in
            state.awaited = Set(indices.filter { state.runCounts[$0] == 0 })
            state.allStarted = state.awaited.isEmpty ? nil : ContractFlag()
            return state.allStarted
        }
        guard let allStarted else { return true }
        return await allStarted.wait(until: deadline) != nil
    }
}
