import Dispatch
import TaskDispatch

/// One task dispatched by a contract check: how it was dispatched, for the evidence in a violation.
struct ContractTask: Sendable {
    let context: TaskContext
    let delay: Duration
    /// The dispatcher's time just before the task was dispatched.
    let dispatchTime: Duration
    /// A detail for the evidence, such as "dispatched from the main actor"; empty when there is none.
    let note: String
}

/// One start of a contract task, as the task saw it.
struct ContractRun: Sendable {
    let task: Int
    let onMainActor: Bool
    let inline: Bool
    let startTime: Duration
    /// Whether the dispatching code had already passed the point after its `dispatch` call.
    let dispatcherMovedOn: Bool
}

/// What the tasks of one rule's check record, from any thread, and a wait for them bounded in real time.
///
/// The wait never blocks a thread: it suspends on a continuation that the last awaited task resumes, or a timer
/// on a global queue, whichever comes first.
final class ContractLog: Sendable {
    private struct State: Sendable {
        var tasks: [ContractTask] = []
        var runs: [ContractRun] = []
        var runCounts: [Int] = []
        var awaited: [Bool] = []
        var remaining = 0
        var waiter: CheckedContinuation<Bool, Never>?
        var waitGeneration = 0
    }

    private let state = LockedValue(State())

    /// Adds a task description and returns its number.
    func add(_ task: ContractTask) -> Int {
        self.state.withLock { state in
            state.tasks.append(task)
            state.runCounts.append(0)
            state.awaited.append(false)
            return state.tasks.count - 1
        }
    }

    /// Records a start of task `index`; resumes the wait when it was the last task awaited.
    func record(_ run: ContractRun) {
        let waiter = self.state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.runs.append(run)
            state.runCounts[run.task] += 1
            guard state.runCounts[run.task] == 1, state.awaited[run.task] else { return nil }
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: true)
    }

    /// Suspends until every task in `indices` has started at least once, or `timeLimit` passes in real time.
    ///
    /// - Returns: `true` if they all started, `false` if the time limit passed first.
    func waitForStarts(of indices: [Int], timeLimit: Duration) async -> Bool {
        let generation = self.state.withLock { state -> Int? in
            state.waitGeneration += 1
            state.awaited = Array(repeating: false, count: state.tasks.count)
            state.remaining = 0
            for index in indices where state.runCounts[index] == 0 {
                state.awaited[index] = true
                state.remaining += 1
            }
            return state.remaining == 0 ? nil : state.waitGeneration
        }
        guard let generation else { return true }
        return await withCheckedContinuation { continuation in
            let isDone = self.state.withLock { state -> Bool in
                guard state.remaining > 0 else { return true }
                state.waiter = continuation
                return false
            }
            if isDone {
                continuation.resume(returning: true)
                return
            }
            DispatchQueue.global().asyncAfter(deadline: timeLimit.dispatchDeadline) {
                self.timeOut(generation)
            }
        }
    }

    private func timeOut(_ generation: Int) {
        let waiter = self.state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.waitGeneration == generation else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: false)
    }

    var tasks: [ContractTask] {
        self.state.withLock { $0.tasks }
    }

    var runs: [ContractRun] {
        self.state.withLock { $0.runs }
    }

    var runCounts: [Int] {
        self.state.withLock { $0.runCounts }
    }

    /// Describes task `index` for the evidence, as in `task 17 (background, delay 20 ms)`.
    func describe(_ index: Int) -> String {
        let task = self.state.withLock { $0.tasks[index] }
        let delay = task.delay == .zero ? "immediate" : "delay \(task.delay.millisecondsText)"
        let note = task.note.isEmpty ? "" : ", \(task.note)"
        return "task \(index) (\(task.context), \(delay)\(note))"
    }
}

extension Duration {
    /// A measured duration as messages show it (see `formatDuration(_:)`), rounded to a tenth of a millisecond:
    /// `20 ms`, `12.3 ms`, `30 s`.
    var millisecondsText: String {
        let (tenths, remainder) = self.nanosecondsSaturated.quotientAndRemainder(dividingBy: 100_000)
        let nearest = tenths + (remainder.magnitude >= 50_000 ? remainder.signum() : 0)
        let (rounded, overflow) = nearest.multipliedReportingOverflow(by: 100_000)
        guard !overflow else { return formatDuration(self) }
        return formatDuration(.nanoseconds(rounded))
    }
}
