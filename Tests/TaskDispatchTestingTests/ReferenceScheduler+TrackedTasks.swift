import TaskDispatch
import TaskDispatchTesting

// Tracked tasks in the reference, and what the comparison may check while they race the test.
//
// A tracked task's body runs on its own executor (the global executor, or the main actor) between two awaits,
// concurrently with the test. The reference moves a tracked task on the moment the dispatcher runs its start or the
// task it awaits: it dispatches the next step at once, at the clock's time. The dispatcher's task gets there a little
// later, but before the clock moves: the async drains move it only when every tracked task has settled, and
// auto-advance only then too (Docs/Design.md, "Settling"; the TestingAsyncCode article). So where the two end up
// agrees, but not the order in which the work in between interleaves:
// - which of several due tasks runs first, when a racing task dispatches one in the meantime (under priority and
//   random order, even between two tasks that were due before: a racing task of higher priority changes which
//   background task priority order weighs a foreground task against, and random order's draws depend on what is
//   due), which decides what runs at all when a task cancels another as it runs (the generator keeps such tasks to
//   dispatch order in sequences with tracked tasks);
// - the dispatch sequence of what is dispatched meanwhile;
// - in auto-drain and auto-advance, which thread runs what, and so what a call returns as its count.
// Until every racing task has caught up, at the end of an async drain (a settled point), the comparison checks only
// what the race cannot change, and the generator keeps to the operations whose outcome it cannot change either
// (``ReferenceScheduler/admits(_:)``). At a settled point it compares everything, the runs since the last settled
// point as a set (task and start time), and learns the sequences dispatched meanwhile from the dispatcher.
extension ReferenceScheduler {
    /// A tracked task: its script, and where its body stands.
    struct TrackedTask {
        /// The identity of its start, and its label.
        let startID: Int
        let script: ModelTrackedScript
        /// The identity of the task each step dispatches; `nil` for a sleep that returns at once.
        let stepIDs: [Int?]
        /// The index of the step the body takes when it next resumes.
        var next = 0
        /// The task the body awaits: its start, then each step it dispatched; `nil` once it has finished.
        var awaiting: Int?

        var isFinished: Bool { self.awaiting == nil }
    }

    /// Whether every tracked task the reference moved on has caught up: the state is then the dispatcher's too.
    var isSettled: Bool { self.racing.isEmpty }

    /// Whether the reference knows the dispatcher's sequence for a task dispatched now: not while a tracked task
    /// races the test, nor when random order runs tasks in an order the reference does not follow (the order of the
    /// runs decides the order of the dispatches they make).
    var knowsDispatchOrder: Bool {
        guard self.racing.isEmpty else { return false }
        if case .random = self.order { return self.follows }
        return true
    }

    /// The tracked tasks that have not finished: `unfinishedTaskCount`.
    var unfinishedTrackedCount: Int {
        self.trackedTasks.reduce(0) { $0 + ($1.isFinished ? 0 : 1) }
    }

    func trackedIndex(startID: Int) -> Int? {
        guard let task = self.task(startID), case .start(let index) = task.kind else { return nil }
        return index
    }

    /// The start identities of the tracked tasks that have finished.
    var finishedTrackedTasks: [Int] {
        self.trackedTasks.filter(\.isFinished).map(\.startID)
    }

    /// The tasks that racing tracked tasks await: the reference dispatched them, the dispatcher may not have yet.
    var racingAwaitedTasks: Set<Int> {
        Set(self.racing.compactMap { self.trackedTasks[$0].awaiting })
    }

    /// Starts a tracked task: its start is pending now, and every task its steps dispatch has its identity.
    mutating func start(_ script: ModelTrackedScript) {
        let index = self.trackedTasks.count
        let startID = self.nextID
        let context: TaskContext = script.isolation == .mainActor ? .foreground : .background
        self.tasks.append(Task(id: startID, kind: .start(tracked: index), context: context, priority: .medium))
        var stepIDs: [Int?] = []
        for step in script.steps {
            guard step.dispatches else {
                stepIDs.append(nil)
                continue
            }
            let id = self.nextID
            let task: Task =
                switch step {
                case .background(let priority, _):
                    Task(id: id, kind: .step(tracked: index), context: .background, priority: priority)
                case .mainActor:
                    Task(id: id, kind: .step(tracked: index), context: .foreground, priority: .medium)
                case .sleep:
                    Task(id: id, kind: .timer(tracked: index), context: .background, priority: .medium)
                }
            self.tasks.append(task)
            stepIDs.append(id)
        }
        self.trackedTasks.append(TrackedTask(startID: startID, script: script, stepIDs: stepIDs, awaiting: startID))
        self.enqueue(startID, after: 0)
    }

    /// The start of tracked task `index`, or the task it awaited, ran: the body runs to its next dispatch (a sleep of
    /// zero or less returns at once) or to its end, and races the test until the next settled point.
    mutating func resume(_ index: Int) {
        self.racing.insert(index)
        self.hasRaced = true
        var task = self.trackedTasks[index]
        task.awaiting = nil
        while task.next < task.script.steps.count {
            let step = task.script.steps[task.next]
            let id = task.stepIDs[task.next]
            task.next += 1
            guard let id else { continue }
            switch step {
            case .background(_, let delay), .mainActor(let delay):
                self.enqueue(id, after: delay.saturatedNanoseconds)
            case .sleep(let duration):
                // The virtual clock's `sleep(for:)` sleeps until `now` advanced by the duration, saturating.
                let (deadline, overflow) = self.now.addingReportingOverflow(duration.saturatedNanoseconds)
                self.enqueue(
                    id, dueAt: self.mistake == .wakesSleepsAtOnce ? self.now : overflow ? Self.never : deadline)
            }
            task.awaiting = id
            break
        }
        self.trackedTasks[index] = task
    }

    // MARK: - What the generator may do, and what the comparison may check

    /// Whether the outcome of `operation` is the same however a racing tracked task interleaves with it, so that the
    /// reference predicts it.
    ///
    /// While tasks race: the async drains (they wait for the race to end; under auto-advance only those whose target
    /// is fixed, since auto-advance may already have moved the clock past where the reference stands), an async step
    /// whose only candidate is the task a racing task is about to dispatch (it waits for that dispatch), and
    /// `value(of:)` of a task that will finish on its own. In a settled stretch, anything, except a synchronous drain
    /// that would run a tracked task's task and go on: the task's next dispatch would race the drain, which may move
    /// the clock before it.
    func admits(_ operation: ModelOperation) -> Bool {
        if case .valueOf(let id) = operation {
            return self.trackedIndex(startID: id).map { self.trackedTasks[$0].isFinished } ?? false
        }
        guard self.isSettled else { return self.admitsWhileRacing(operation) }
        switch operation {
        case .runUntilIdle:
            return !self.hasTrackedTask(dueBy: Self.latestTime)
        case .advanceBy(let duration):
            let (sum, overflow) = self.now.addingReportingOverflow(duration.saturatedNanoseconds)
            let target = overflow ? (duration.saturatedNanoseconds < 0 ? .min : .max) : sum
            return target < self.now || !self.hasTrackedTask(dueBy: target)
        case .advanceTo(let time):
            let target = time.saturatedNanoseconds
            return target < self.now || !self.hasTrackedTask(dueBy: target)
        case .runCurrent:
            // It runs only tasks dispatched before it, so a racing dispatch never joins it; but under random order
            // the reference follows its choices from the runs the closures note, and a start notes none.
            if case .random = self.order { return !self.hasTrackedTask(dueBy: self.now) }
            return true
        case .runUntilTaskLabeled, .runUntilRunCount:
            if case .random = self.order { return !self.hasTrackedTask(dueBy: Self.latestTime) }
            if self.mode != .manual { return !self.hasTrackedTask(dueBy: Self.latestTime) }
            // Without a tracked task's task pending, none can come (only a tracked task's own task dispatches one);
            // the trial below would be wasted, and over a live series it runs up to the runaway limit.
            guard self.pendingTasks.contains(where: { $0.owner != nil }) else { return true }
            // Admitted when a tracked task's task can only be the last it runs.
            var trial = self
            trial.follows = false
            let before = trial.runs.count
            _ = trial.apply(operation)
            let ran = trial.runs[before...].map { trial.tasks[$0.task - 1].owner != nil }
            return !ran.dropLast().contains(true)
        case .runNextAsync(let context, let waits):
            return !waits || !self.dueTasks(in: context).isEmpty
        default:
            return true
        }
    }

    private func admitsWhileRacing(_ operation: ModelOperation) -> Bool {
        switch operation {
        case .runUntilIdleAsync:
            return true
        case .settle, .advanceByAsync:
            return self.mode != .autoAdvance
        case .advanceToAsync(let time):
            return self.mode != .autoAdvance || time.saturatedNanoseconds >= self.now
        case .runNextAsync(let context, let waits):
            return waits && self.mode == .manual && self.onlyRacingDueTask(in: context) != nil
        default:
            return false
        }
    }

    /// Whether a pending task of a tracked task falls due by `time`.
    private func hasTrackedTask(dueBy time: Int64) -> Bool {
        self.pendingTasks.contains { $0.owner != nil && $0.due <= time }
    }

    /// The task a racing tracked task is about to dispatch, if it is the only task an async step in `context` could
    /// find: the step then waits for that dispatch and runs it, whenever it comes.
    func onlyRacingDueTask(in context: TaskContext?) -> Int? {
        let due = self.dueTasks(in: context)
        guard due.count == 1, let only = due.first, self.racingAwaitedTasks.contains(only.id) else { return nil }
        return only.id
    }

    /// What the comparison checks after `operation`, which ran a tracked task's task if `resumedTrackedTask`.
    func checks(
        after operation: ModelOperation,
        wasSettled: Bool,
        resumedTrackedTask: Bool
    ) -> ModelObservation.Checks {
        if wasSettled && !resumedTrackedTask { return .everything }
        var checks = ModelObservation.Checks.everything
        checks.settledPoint = self.isSettled
        if self.mode == .manual {
            // Only the test runs tasks: the count and the clock are the test's, and so is the order of the runs,
            // except in an async drain, which runs what racing tasks dispatch as it comes. What a racing task is about
            // to dispatch may or may not be there yet.
            checks.runs = !operation.isAsync || operation.isStep
            if !self.isSettled { checks.pending = .excluding(self.racingAwaitedTasks) }
            return checks
        }
        // Auto-drain: a racing task's dispatch runs on that task's own thread, auto-advance moves the clock there.
        checks.count = false
        checks.runs = false
        if !self.isSettled {
            checks.clock = false
            checks.pending = .none
        }
        return checks
    }

    /// The pending tasks as the dispatcher should list them, with the sequence of each task dispatched during a race
    /// taken from `observed` (the dispatcher's own list); at a settled point (`keeping`), the reference keeps them.
    ///
    /// A learnt sequence must lie among those handed out since the reference lost track; one that does not is not
    /// learnt, so the comparison shows it.
    mutating func pendingTasks(learningFrom observed: [ModelObservation.Pending], keeping: Bool) -> [Task] {
        var sequences: [Int: UInt64] = [:]
        for entry in observed { sequences[entry.task] = entry.sequence }
        var pending = self.pendingTasks
        for index in pending.indices where !pending[index].isSequenceKnown {
            guard let sequence = sequences[pending[index].id], let first = self.firstUnknownSequence,
                sequence >= first && sequence < self.nextSequence
            else { continue }
            pending[index].sequence = sequence
            pending[index].isSequenceKnown = true
            if keeping { self.tasks[pending[index].id - 1] = pending[index] }
        }
        if keeping { self.firstUnknownSequence = nil }
        return pending.sorted { $0.isEarlier(than: $1) }
    }

    /// Hands out the runs since the last settled point, and starts counting again.
    mutating func takeRunsSinceSettledPoint() -> [(task: Int, start: Int64)] {
        defer { self.runsSinceSettledPoint = [] }
        return self.runsSinceSettledPoint
    }

    /// How the history names task `id`: its label, or for a sleep's timer, which is labeled after its tracked task,
    /// `tn:sleep`.
    func historyName(_ id: Int) -> String {
        guard case .timer(let tracked) = self.tasks[id - 1].kind else { return "t\(id)" }
        return "t\(self.trackedTasks[tracked].startID):sleep"
    }
}
