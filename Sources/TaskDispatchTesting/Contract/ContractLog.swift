import TaskDispatch

/// One task dispatched by a contract check: how it was dispatched, for the evidence in a violation.
struct ContractTask: Sendable {
    let context: TaskContext
    let delay: Duration
    /// The dispatcher's time just before the task was dispatched.
    let dispatchTime: Duration
    /// A detail for the evidence, such as "dispatched from the main actor"; empty when there is none.
    let note: String
    /// Set at each start of the task, for a wait.
    let started = ContractFlag()
}

/// One start of a contract task, as the task saw it.
struct ContractRun: Sendable {
    let task: Int
    let onMainActor: Bool
    let inline: Bool
    let startTime: Duration
    /// Whether the task's `dispatch(_:)` call had already returned.
    let dispatcherMovedOn: Bool
}

extension ContractLog {
    /// Describes task `index` for the evidence, as in `task 17 (background, delay 20 ms)`.
    func describe(_ index: Int) -> String {
        let task = self.current.tasks[index]
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
