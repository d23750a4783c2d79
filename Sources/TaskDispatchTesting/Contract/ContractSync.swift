import Dispatch
import TaskDispatch

// The contract check's state shared across threads, and its waits: the only code of the check that locks.

/// A value that arrives once, from any thread, and one wait for it bounded in real time; as ``ContractFlag``, a flag.
///
/// The wait never blocks a thread: it suspends on a continuation that ``fulfil(_:)`` or a timer on a global queue
/// resumes, whichever comes first.
final class ContractSignal<Value: Sendable>: Sendable {
    private typealias Waiter = CheckedContinuation<Value?, Never>
    private let state = LockedValue<(value: Value?, waiter: Waiter?)>((nil, nil))

    /// The value, once it has arrived.
    var value: Value? { self.value(orParking: nil) }

    /// Delivers `value`; later calls do nothing.
    func fulfil(_ value: Value) { self.resumeWaiter(with: value) }

    /// Suspends until the value arrives, or until `deadline` passes in real time (`nil`); one wait at a time.
    func wait(until deadline: ContinuousClock.Instant) async -> Value? {
        await withCheckedContinuation { continuation in
            if let arrived = self.value(orParking: continuation) { return continuation.resume(returning: arrived) }
            DispatchQueue.global().asyncAfter(deadline: (deadline - ContinuousClock.now).dispatchDeadline) {
                self.resumeWaiter(with: nil)
            }
        }
    }

    /// The value if it has arrived; until then, parks `waiter` (when given) for the value or the deadline to resume.
    private func value(orParking waiter: Waiter?) -> Value? {
        self.state.withLock { state in
            if state.value == nil, let waiter { state.waiter = waiter }
            return state.value
        }
    }

    /// Resumes the wait with `value`, kept unless one arrived first; `nil` when the deadline passed.
    private func resumeWaiter(with value: Value?) {
        let waiter = self.state.withLock { state -> Waiter? in
            if value != nil {
                guard state.value == nil else { return nil }
                state.value = value
            }
            return state.waiter.take()
        }
        waiter?.resume(returning: value)
    }
}

extension ContractSignal {
    /// A signal fulfilled with the outcome of `operation`, run in a new task, which it returns too (for a cancel).
    static func outcome<Success>(
        of operation: @escaping @Sendable () async throws -> Success
    ) -> (ContractSignal<Result<Success, any Error>>, Task<Success, any Error>)
    where Value == Result<Success, any Error> {
        let outcome = ContractSignal<Result<Success, any Error>>()
        let task = Task { try await operation() }
        Task { outcome.fulfil(await task.result) }
        return (outcome, task)
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

/// What happens during one rule's check, recorded from any thread in one locked state: the tasks it dispatched
/// (``ContractTask``), the dispatch calls in progress, and the tasks' starts (``ContractRun``).
final class ContractLog: Sendable {
    /// What the log records, on the thread where it happens.
    enum Event {
        /// A `dispatch(_:)` call of the task begins on this thread.
        case dispatching(ContractTask)
        /// The `dispatch(_:)` call of task `index` has returned.
        case returned(Int)
        /// Task `index` starts on this thread.
        case started(Int, onMainActor: Bool, startTime: Duration)
    }

    private struct State: Sendable {
        var tasks: [ContractTask] = []
        var runs: [ContractRun] = []
        var runCounts: [Int] = []
        var returned: Set<Int> = []
        /// The check's dispatch calls in progress, by thread: a task that starts on a thread while one is in progress
        /// there runs on the caller's stack.
        var callDepths: [UInt: Int] = [:]
    }

    private let state = LockedValue(State())

    /// What the log holds now, read in one piece: the tasks, their starts in order, and each task's number of starts.
    var current: (tasks: [ContractTask], runs: [ContractRun], runCounts: [Int]) {
        self.state.withLock { ($0.tasks, $0.runs, $0.runCounts) }
    }

    /// Records `event`, made on the current thread; returns the task's number, or for a start the task's starts.
    @discardableResult
    func record(_ event: Event) -> Int {
        let thread = currentThreadIdentity()
        return self.state.withLock { state in
            switch event {
            case .dispatching(let task):
                state.tasks.append(task)
                state.runCounts.append(0)
                state.callDepths[thread, default: 0] += 1
                return state.tasks.count - 1
            case .returned(let index):
                state.returned.insert(index)
                let depth = state.callDepths[thread, default: 0] - 1
                state.callDepths[thread] = depth > 0 ? depth : nil
                return index
            case .started(let index, let onMainActor, let startTime):
                let run = ContractRun(
                    task: index,
                    onMainActor: onMainActor,
                    inline: state.callDepths[thread] != nil,
                    startTime: startTime,
                    dispatcherMovedOn: state.returned.contains(index)
                )
                state.runs.append(run)
                state.runCounts[index] += 1
                return state.runCounts[index]
            }
        }
    }
}
