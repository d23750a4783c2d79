import TaskDispatch
import TaskDispatchTesting

/// An obviously correct `ManualDispatcher`, for the model-based test: every task ever dispatched in one array,
/// searched from scratch at every step, and a clock.
///
/// No queues, heap, counters or compaction: a task is due when its due time is at or before the clock, and the
/// next task is found by looking at all of them. The rules it follows, from the dispatcher's documentation:
/// - A task's key is (due time, dispatch sequence). A delay of zero or less makes it due now; a due time past
///   the clock's range (`Int64.max - 1` nanoseconds) is never, and such a task never runs.
/// - Dispatch order runs the due task with the smallest key. Priority order takes the foreground task with the
///   smallest key and the background task with the highest priority (smallest key among equals), and runs the
///   background one only if its key is smaller (`Schedule+Choosing.swift`).
/// - A step runs one due task, or throws `noTaskToRun`. A drain runs due tasks, jumping the clock to the next
///   delayed task only when nothing at all is due, up to its clock limit; it stops with `runawayTasks` after the
///   tasks pending at its start plus the runaway limit, if a task could still run.
/// - Auto-drain runs every due task after each operation; auto-advance also jumps the clock.
/// - `runCurrent()` runs only tasks dispatched before it started.
///
/// Random order is checked rather than predicted: the generator's draws are the dispatcher's own business, so the
/// reference follows the choices the dispatcher made (``followedRuns``) and checks that each was allowed: the
/// oldest due foreground task or any due background task. It does not model tracked tasks or an auto-drain's
/// runaway (which the next run method reports): the scenarios stay out of those.
struct ReferenceScheduler {
    enum State: Equatable {
        case pending
        case ran
        case cancelled
    }

    struct Task {
        var id: Int
        var spec: ModelTaskSpec
        /// The due time in nanoseconds; `Int64.max` for never.
        var due: Int64
        var state = State.pending

        /// The dispatch sequence: tasks are numbered in dispatch order from 1, as the dispatcher numbers them.
        var sequence: UInt64 { UInt64(self.id) }

        func isEarlier(than other: Task) -> Bool {
            self.due != other.due ? self.due < other.due : self.id < other.id
        }
    }

    /// A mistake to make on purpose, to prove that the comparison catches and shrinks a wrong schedule.
    enum Mistake {
        /// Runs background tasks in dispatch order under priority order.
        case ignoresPriority
        /// Allows only the oldest due background task under random order, as if it were dispatch order.
        case narrowsRandomOrder
    }

    static let latestTime = Int64.max - 1
    static let never = Int64.max

    var mode: ManualDispatcher.Mode
    var order: ManualDispatcher.Order
    let runawayLimit: Int
    let historyLimit: Int
    var mistake: Mistake?

    var now: Int64 = 0
    /// Every task dispatched, task `n` at index `n - 1`.
    private(set) var tasks: [Task] = []
    /// The tasks run, in order, with the time each started.
    private(set) var runs: [(task: Int, start: Int64)] = []
    /// Under random order, the tasks the dispatcher ran during the operation being applied, in order: the reference
    /// takes each choice from here after checking that the order allowed it.
    var followedRuns: [Int] = []
    /// The first choice of the dispatcher that random order does not allow, if any.
    private(set) var disallowedChoice: String?

    init(_ configuration: ModelScenario.Configuration, mistake: Mistake? = nil) {
        self.mode = configuration.mode
        self.order = configuration.order
        self.runawayLimit = max(1, configuration.runawayLimit)
        self.historyLimit = max(0, configuration.historyLimit)
        self.mistake = mistake
    }

    var nextID: Int { self.tasks.count + 1 }

    /// The pending tasks, earliest first.
    var pending: [Task] {
        self.tasks.filter { $0.state == .pending }.sorted { $0.isEarlier(than: $1) }
    }

    var pendingCount: Int {
        self.tasks.reduce(0) { $0 + ($1.state == .pending ? 1 : 0) }
    }

    func task(_ id: Int) -> Task? {
        self.tasks.indices.contains(id - 1) ? self.tasks[id - 1] : nil
    }

    /// The earliest due time of a delayed task that can fall due.
    var nextDelayedDue: Int64? {
        self.tasks.lazy.filter { $0.state == .pending && $0.due > self.now && $0.due != Self.never }.map(\.due).min()
    }

    // MARK: - Operations

    /// Applies `operation`, then lets auto-drain or auto-advance run what they would.
    ///
    /// - Returns: What the call returned, and the tasks that ran, in order.
    mutating func apply(_ operation: ModelOperation) -> (ModelObservation.Result, [Int]) {
        let runsBefore = self.runs.count
        self.followedRuns.reverse()  // popped from the end
        let result = self.perform(operation)
        self.drainAutomatically()
        return (result, self.runs[runsBefore...].map(\.task))
    }

    private mutating func perform(_ operation: ModelOperation) -> ModelObservation.Result {
        switch operation {
        case .dispatch(let spec):
            self.dispatch(spec)
            return .nothing
        case .cancel(let id):
            guard self.task(id) != nil else { return .nothing }
            guard self.tasks[id - 1].state == .pending else { return .cancelled(false) }
            self.tasks[id - 1].state = .cancelled
            return .cancelled(true)
        case .runNextForeground:
            return self.step(.foreground)
        case .runNextBackground:
            return self.step(.background)
        case .runNext:
            return self.step(nil)
        case .runCurrent:
            let limit = UInt64(self.nextID)
            var ran = 0
            while let id = self.chooseDue(in: nil, before: limit) {
                self.run(id)
                ran += 1
            }
            return .count(ran)
        case .runUntilIdle:
            switch self.drain(clockLimit: Self.latestTime) {
            case .ran(let count): return .count(count)
            case .runaway: return .failed(.runawayTasks(limit: self.runawayLimit))
            }
        case .advanceBy(let duration):
            let (sum, overflow) = self.now.addingReportingOverflow(duration.saturatedNanoseconds)
            return self.advance(to: overflow ? (duration.saturatedNanoseconds < 0 ? .min : .max) : sum)
        case .advanceTo(let time):
            return self.advance(to: time.saturatedNanoseconds)
        case .runUntilTaskLabeled(let target):
            var found = false
            let end = self.drain(clockLimit: Self.latestTime) { id, _ in
                found = id == target
                return found
            }
            if case .runaway = end { return .failed(.runawayTasks(limit: self.runawayLimit)) }
            return found ? .ran(target) : .failed(.conditionNotMet)
        case .runUntilRunCount(let wanted):
            if self.runs.count >= wanted { return .count(0) }
            var satisfied = false
            let end = self.drain(clockLimit: Self.latestTime) { _, runs in
                satisfied = runs >= wanted
                return satisfied
            }
            switch end {
            case .runaway: return .failed(.runawayTasks(limit: self.runawayLimit))
            case .ran(let count): return satisfied ? .count(count) : .failed(.conditionNotMet)
            }
        case .verifyIdle:
            return self.pendingCount == 0 ? .nothing : .failed(.pendingTasks)
        case .setMode(let mode):
            self.mode = mode
            return .nothing
        case .setOrder(let order):
            self.order = order
            return .nothing
        }
    }

    private mutating func dispatch(_ spec: ModelTaskSpec) {
        let delay = spec.delay.saturatedNanoseconds
        var due = self.now
        if delay > 0 {
            let (sum, overflow) = self.now.addingReportingOverflow(delay)
            due = overflow || sum > Self.latestTime ? Self.never : sum
        }
        self.tasks.append(Task(id: self.nextID, spec: spec, due: due))
    }

    private mutating func run(_ id: Int) {
        self.tasks[id - 1].state = .ran
        self.runs.append((id, self.now))
        if let target = self.tasks[id - 1].spec.cancels, self.task(target)?.state == .pending {
            self.tasks[target - 1].state = .cancelled
        }
        for child in self.tasks[id - 1].spec.children { self.dispatch(child) }
    }

    private mutating func step(_ context: TaskContext?) -> ModelObservation.Result {
        guard let id = self.chooseDue(in: context, before: .max) else { return .failed(.noTaskToRun(context)) }
        self.run(id)
        return .ran(id)
    }

    private mutating func advance(to target: Int64) -> ModelObservation.Result {
        guard target >= self.now else {
            return .failed(.clockMovedBackwards(from: .nanoseconds(self.now), to: .nanoseconds(target)))
        }
        switch self.drain(clockLimit: target) {
        case .runaway:
            return .failed(.runawayTasks(limit: self.runawayLimit))
        case .ran(let count):
            self.now = max(self.now, min(target, Self.latestTime))
            return .count(count)
        }
    }

    private enum DrainEnd {
        case ran(Int)
        case runaway
    }

    /// Runs due tasks, jumping the clock up to `clockLimit` when nothing is due, until none is left or `stop` holds
    /// after a run (it gets the task and the number of runs so far); stops with a runaway after the tasks pending at
    /// the start plus the runaway limit.
    private mutating func drain(clockLimit: Int64, stop: (Int, Int) -> Bool = { _, _ in false }) -> DrainEnd {
        let bound = self.pendingCount + self.runawayLimit
        var ran = 0
        while true {
            if ran >= bound {
                let runnable = self.hasDueTask || (self.nextDelayedDue.map { $0 <= clockLimit } ?? false)
                return runnable ? .runaway : .ran(ran)
            }
            guard let id = self.next(jumpingClockTo: clockLimit) else { return .ran(ran) }
            self.run(id)
            ran += 1
            if stop(id, self.runs.count) { return .ran(ran) }
        }
    }

    /// After each operation: auto-drain runs what is due; auto-advance also moves the clock to each delayed task.
    private mutating func drainAutomatically() {
        switch self.mode {
        case .manual:
            return
        case .autoDrain:
            while let id = self.chooseDue(in: nil, before: .max) { self.run(id) }
        case .autoAdvance:
            while let id = self.next(jumpingClockTo: Self.latestTime) { self.run(id) }
        }
    }

    // MARK: - Choosing

    /// The dispatcher's next choice, if `allowed` holds it; otherwise notes the disallowed choice, and goes on with
    /// it if it is pending (with the first allowed task if not).
    private mutating func follow(allowed: [Int]) -> Int? {
        guard let first = allowed.first else { return nil }
        guard let choice = self.followedRuns.popLast() else {
            self.disallowedChoice =
                self.disallowedChoice ?? "the dispatcher ran nothing more, with \(allowed.map { "t\($0)" }) due"
            return first
        }
        guard allowed.contains(choice) else {
            self.disallowedChoice =
                self.disallowedChoice ?? "the dispatcher ran t\(choice), but only \(allowed.map { "t\($0)" }) could run"
            return self.task(choice)?.state == .pending ? choice : first
        }
        return choice
    }

    private var hasDueTask: Bool {
        self.tasks.contains { $0.state == .pending && $0.due <= self.now }
    }

    /// The next due task of any context; when nothing at all is due, the clock first jumps to the next delayed task
    /// if that falls due by `clockLimit`.
    private mutating func next(jumpingClockTo clockLimit: Int64) -> Int? {
        if let id = self.chooseDue(in: nil, before: .max) { return id }
        guard !self.hasDueTask, let due = self.nextDelayedDue, due <= clockLimit else { return nil }
        self.now = due
        return self.chooseDue(in: nil, before: .max)
    }

    /// The due task the order runs next in `context` (`nil`: either), among tasks dispatched before `limit`.
    private mutating func chooseDue(in context: TaskContext?, before limit: UInt64) -> Int? {
        let due = self.tasks.filter { $0.state == .pending && $0.due <= self.now && $0.sequence < limit }
        let foreground = due.filter { $0.spec.context == .foreground }.min { $0.isEarlier(than: $1) }
        var backgroundTasks = due.filter { $0.spec.context == .background }
        if case .random = self.order {
            var allowed = context == .background ? [] : foreground.map { [$0.id] } ?? []
            if context != .foreground { allowed += backgroundTasks.map(\.id) }
            if self.mistake == .narrowsRandomOrder, let oldest = backgroundTasks.min(by: { $0.isEarlier(than: $1) }) {
                allowed = [oldest.id]
            }
            return self.follow(allowed: allowed)
        }
        if self.order == .priority && self.mistake != .ignoresPriority {
            let highest = backgroundTasks.map(\.spec.priority).max()
            backgroundTasks = backgroundTasks.filter { $0.spec.priority == highest }
        }
        let background = backgroundTasks.min { $0.isEarlier(than: $1) }
        switch (context, foreground, background) {
        case (.foreground?, let task, _): return task?.id
        case (.background?, _, let task): return task?.id
        case (nil, let foreground?, let background?):
            return background.isEarlier(than: foreground) ? background.id : foreground.id
        case (nil, let foreground, let background): return (foreground ?? background)?.id
        }
    }
}
