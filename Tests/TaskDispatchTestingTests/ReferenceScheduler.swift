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
/// - A repeating series (`background(every:)`, `foreground(every:)`) is one task whose next tick is pending while it
///   lives: tick k is due at start + first delay + (k − 1) × interval (an interval under a nanosecond is one, a first
///   delay of zero or less is at once, a time past the clock's range is never); when a tick has run, its closure
///   noting the run, the series dispatches the next tick, due at the first point of the grid after the clock (a new
///   dispatch sequence, so a task dispatched earlier for the same instant runs first). Its handle's `cancel()` stops
///   it, a tick already due included. A drain to idle (`runUntilIdle()`) stops with `runawayTasks` at a jump of the
///   clock to a live series' tick; `advance`, `run(until:)` and `run(untilTaskLabeled:)` run the ticks in their
///   window. Auto-advance stops jumping when only live series are left, besides tasks that never fall due.
/// - A `DispatchScope` forwards a dispatch and counts it as live work (`liveWorkCount`) until it runs or is
///   cancelled; `cancelAll()` cancels its live work and every later dispatch, which never reaches the dispatcher.
/// - The async drains run as the synchronous ones do, and wait for the tracked tasks to settle before each move
///   of the clock; the async steps run a due task at once, and with `waitingUpTo: .zero` throw `waitTimedOut`
///   when none is due.
///
/// A tracked task is a script (`ReferenceScheduler+TrackedTasks.swift`): its start, then each await, is a task;
/// when one runs, the next is dispatched at once, at the clock's time, which the documented settling makes the
/// dispatcher's outcome too.
///
/// Random order is checked rather than predicted: the generator's draws are the dispatcher's own business, so the
/// reference follows the choices the dispatcher made (``followedRuns``) and checks that each was allowed: the
/// oldest due foreground task or any due background task. It does not model an auto-drain's runaway (which the
/// next run method reports): the scenarios stay out of it.
struct ReferenceScheduler {
    enum State: Equatable {
        /// Its identity is taken, and it is not dispatched yet: a child whose parent has not run, or the step of a
        /// tracked task that has not got there.
        case reserved
        case pending
        case ran
        case cancelled
    }

    /// What a task is: who dispatches it, and who notes that it ran.
    enum Kind {
        /// Dispatched by the test, or by the task that reserved it as a child; its closure notes its run, cancels a
        /// task if its spec says so, and dispatches its children.
        case plain(ModelTaskSpec, children: [Int])
        /// The start of the tracked task at this index of ``trackedTasks``.
        case start(tracked: Int)
        /// A `runInBackground` or `runOnMainActor` of that tracked task; its closure notes its run.
        case step(tracked: Int)
        /// The timer of a clock sleep of that tracked task.
        case timer(tracked: Int)
        /// A repeating series, whose next tick is this task while the series lives: tick k falls due at `base` +
        /// (k − 1) × `interval`; a tick's closure notes its run, and the series then dispatches the next tick, due at
        /// the first point of that grid after the clock (a time past the clock's range is never).
        case series(ModelSeriesSpec, base: Int64, interval: Int64)
    }

    struct Task {
        var id: Int
        var kind: Kind
        var context: TaskContext
        var priority: BackgroundPriority
        /// The due time in nanoseconds; `Int64.max` for never.
        var due: Int64 = 0
        /// The dispatch sequence: dispatches are numbered from 1, in the order the dispatcher accepts them.
        var sequence: UInt64 = 0
        /// Whether ``sequence`` is the dispatcher's: a task dispatched while a tracked task races the test has a
        /// place among the dispatches that only the dispatcher knows, learnt at the next settled point.
        var isSequenceKnown = true
        var state = State.reserved
        /// The scope the task was dispatched through, if any.
        var scope: Int?

        /// The tracked task (an index into ``trackedTasks``) whose start or step this task is.
        var owner: Int? {
            switch self.kind {
            case .plain, .series: nil
            case .start(let tracked), .step(let tracked), .timer(let tracked): tracked
            }
        }

        /// Whether the task's own closure notes its run (so it shows in ``ModelObservation/ran``): plain tasks and
        /// the awaitable dispatches of tracked tasks. A start and a sleep's timer run the library's closures; the
        /// tracked task's body notes them when it resumes.
        var notesItsRun: Bool {
            switch self.kind {
            case .plain, .step, .series: true
            case .start, .timer: false
            }
        }

        /// The interval of the series whose next tick this is; `nil` for a one-off task.
        var repeatInterval: Int64? {
            guard case .series(_, _, let interval) = self.kind else { return nil }
            return interval
        }

        /// Whether the test holds a handle that cancels it: a plain task or a series.
        var hasHandle: Bool {
            switch self.kind {
            case .plain, .series: true
            case .start, .step, .timer: false
            }
        }

        func isEarlier(than other: Task) -> Bool {
            self.due != other.due ? self.due < other.due : self.sequence < other.sequence
        }
    }

    /// A mistake to make on purpose, to prove that the comparison catches and shrinks a wrong schedule.
    enum Mistake {
        /// Runs background tasks in dispatch order under priority order.
        case ignoresPriority
        /// Allows only the oldest due background task under random order, as if it were dispatch order.
        case narrowsRandomOrder
        /// Wakes a tracked task's clock sleep at once, as if the sleep did not wait for the clock.
        case wakesSleepsAtOnce
    }

    static let latestTime = Int64.max - 1
    static let never = Int64.max
    /// The real-time limit of the model's dispatchers: generous, since only a failure spends it (a tracked task
    /// that does not settle), and other suites share the machine's threads.
    static let waitLimit = Duration.seconds(60)

    var mode: ManualDispatcher.Mode
    var order: ManualDispatcher.Order
    let runawayLimit: Int
    let historyLimit: Int
    var mistake: Mistake?

    var now: Int64 = 0
    /// Every task, task `n` at index `n - 1`, reserved ones included.
    var tasks: [Task] = []
    /// The identities of the pending tasks, in no particular order: the searches look at these instead of every task
    /// ever dispatched (a sequence dispatches hundreds; a few are pending at a time). Changed only by
    /// ``setState(_:of:)``.
    private(set) var pendingIDs: [Int] = []
    /// The tasks run, in order, with the time each started.
    private(set) var runs: [(task: Int, start: Int64)] = []
    /// The runs since the last settled point (see ``isSettled``), compared as a set when the next one comes.
    var runsSinceSettledPoint: [(task: Int, start: Int64)] = []
    /// The number of runs noted by the tasks' own closures, which `run(until:)` counts.
    private(set) var notedRunCount = 0
    /// The sequence the next dispatch gets.
    private(set) var nextSequence: UInt64 = 1
    /// Under random order, the tasks the dispatcher ran during the operation being applied, in order: the reference
    /// takes each choice from here after checking that the order allowed it.
    var followedRuns: [Int] = []
    /// Whether random order follows ``followedRuns``; when it does not (the runs depend on a race, and are compared
    /// as a set), the reference takes the first allowed task.
    var follows = true
    /// The first choice of the dispatcher that random order does not allow, if any.
    private(set) var disallowedChoice: String?

    /// The tasks started with `startTask`, in start order.
    var trackedTasks: [TrackedTask] = []
    /// The tracked tasks the reference has moved on (at a run of their start or of a task they awaited) whose real
    /// counterparts may not have caught up yet: they run on their own executors until they next wait.
    var racing: Set<Int> = []
    /// The first sequence whose place the reference did not know, since the last settled point.
    var firstUnknownSequence: UInt64?
    /// Whether a tracked task ever raced the test: the runs' order then holds only within each settled stretch.
    var hasRaced = false
    /// Whether each `DispatchScope` of the sequence is cancelled.
    private(set) var scopeCancelled: [Bool]
    /// Set by a drain to idle that stopped at the jump to a live series' tick.
    private var refusedSeriesJump = false
    /// Whether a cancelled scope refused a dispatch. Whether such a dispatch takes a dispatch sequence number is the
    /// dispatcher's business (`PendingTask.sequence` is documented as unique and in dispatch order, not as dense):
    /// from then on the comparison checks the pending tasks' sequences by their order only.
    private(set) var sequenceGapsAllowed = false
    /// A trial's bound (``runsFew(_:limit:)``): no task is chosen once ``runs`` holds this many.
    private var runCap = Int.max

    init(_ configuration: ModelScenario.Configuration, mistake: Mistake? = nil) {
        self.mode = configuration.mode
        self.order = configuration.order
        self.runawayLimit = max(1, configuration.runawayLimit)
        self.historyLimit = max(0, configuration.historyLimit)
        self.mistake = mistake
        self.scopeCancelled = Array(repeating: false, count: configuration.scopes)
    }

    /// Each scope's `liveWorkCount` (its pending tasks and live series) and `isCancelled`.
    var scopeStates: [ModelObservation.ScopeState] {
        self.scopeCancelled.indices.map { scope in
            ModelObservation.ScopeState(
                liveWork: self.pendingTasks.count(where: { $0.scope == scope }), isCancelled: self.scopeCancelled[scope]
            )
        }
    }

    /// Whether `operation` runs at most `limit` tasks here, as a trial on a copy shows (the copy stops choosing tasks
    /// at the limit).
    func runsFew(_ operation: ModelOperation, limit: Int = 300) -> Bool {
        var trial = self
        trial.follows = false
        trial.followedRuns = []
        trial.runCap = self.runs.count + limit
        _ = trial.applyOnce(operation)
        return trial.runs.count < trial.runCap
    }

    var nextID: Int { self.tasks.count + 1 }

    /// The pending tasks, earliest first.
    var pending: [Task] {
        self.pendingTasks.sorted { $0.isEarlier(than: $1) }
    }

    /// The pending tasks, in no particular order.
    var pendingTasks: [Task] {
        self.pendingIDs.map { self.tasks[$0 - 1] }
    }

    var pendingCount: Int {
        self.pendingIDs.count
    }

    /// Moves task `id` to `state`, keeping ``pendingIDs`` in step.
    private mutating func setState(_ state: State, of id: Int) {
        if self.tasks[id - 1].state == .pending { self.pendingIDs.removeAll { $0 == id } }
        if state == .pending { self.pendingIDs.append(id) }
        self.tasks[id - 1].state = state
    }

    func task(_ id: Int) -> Task? {
        self.tasks.indices.contains(id - 1) ? self.tasks[id - 1] : nil
    }

    /// The earliest due time of a delayed task that can fall due.
    var nextDelayedDue: Int64? {
        self.pendingTasks.lazy.filter { $0.due > self.now && $0.due != Self.never }.map(\.due).min()
    }

    // MARK: - Operations

    /// What applying an operation did.
    struct Applied {
        var result: ModelObservation.Result
        /// The runs during the operation that the tasks' closures note, in order.
        var noted: [Int]
        /// Whether a start or an awaited task of a tracked task ran, which sets that task running on its own.
        var resumedTrackedTask: Bool
    }

    /// Applies `operation`, then lets auto-drain or auto-advance run what they would.
    ///
    /// Under random order it follows the dispatcher's choices when they can be followed: in a settled stretch, for
    /// an operation that resumes no tracked task (or a step, which runs one task, whichever it is).
    mutating func apply(_ operation: ModelOperation) -> Applied {
        self.follows = operation.isStep || self.isSettled
        if self.follows, case .random = self.order, !operation.isStep {
            var trial = self
            trial.follows = false
            trial.followedRuns = []
            self.follows = !trial.applyOnce(operation).resumedTrackedTask
        }
        return self.applyOnce(operation)
    }

    fileprivate mutating func applyOnce(_ operation: ModelOperation) -> Applied {
        let runsBefore = self.runs.count
        self.followedRuns.reverse()  // popped from the end
        let result = self.perform(operation)
        self.drainAutomatically()
        let ran = self.runs[runsBefore...].map(\.task)
        return Applied(
            result: result,
            noted: ran.filter { self.tasks[$0 - 1].notesItsRun },
            resumedTrackedTask: ran.contains { self.tasks[$0 - 1].owner != nil }
        )
    }

    private mutating func perform(_ operation: ModelOperation) -> ModelObservation.Result {
        switch operation {
        case .dispatch(let spec):
            self.dispatch(spec)
            return .nothing
        case .cancel(let id):
            guard let task = self.task(id) else { return .nothing }
            guard task.hasHandle, task.state == .pending else { return .cancelled(false) }
            self.setState(.cancelled, of: id)
            return .cancelled(true)
        case .runNextForeground:
            return self.step(.foreground)
        case .runNextBackground:
            return self.step(.background)
        case .runNext:
            return self.step(nil)
        case .runCurrent:
            let limit = self.nextSequence
            var ran = 0
            while let id = self.chooseDue(in: nil, before: limit) {
                self.run(id)
                ran += 1
            }
            return .count(ran)
        case .runUntilIdle, .runUntilIdleAsync:
            switch self.drain(clockLimit: Self.latestTime, refusingSeries: true) {
            case .ran(let count): return self.settled(.count(count), by: operation)
            case .runaway: return .failed(.runawayTasks(limit: self.runawayLimit))
            }
        case .advanceBy(let duration), .advanceByAsync(let duration):
            // A move back past the clock's range (saturated at `Int64.min`) targets the range's start.
            let nanoseconds = duration.saturatedNanoseconds
            let (sum, overflow) = self.now.addingReportingOverflow(nanoseconds)
            let target = nanoseconds == .min ? .min : overflow ? (nanoseconds < 0 ? .min : .max) : sum
            return self.settled(self.advance(to: target), by: operation)
        case .advanceTo(let time), .advanceToAsync(let time):
            return self.settled(self.advance(to: time.saturatedNanoseconds), by: operation)
        case .settle:
            return self.settled(self.advance(to: self.now), by: operation)
        case .runUntilTaskLabeled(let target):
            // A sleep's timer is labeled after its tracked task, never `tn`.
            var found = false
            let end = self.drain(clockLimit: Self.latestTime) { task, _ in
                if case .timer = task.kind { return false }
                found = task.id == target
                return found
            }
            if case .runaway = end { return .failed(.runawayTasks(limit: self.runawayLimit)) }
            return found ? .ran(target) : .failed(.conditionNotMet)
        case .runUntilRunCount(let wanted):
            if self.notedRunCount >= wanted { return .count(0) }
            var satisfied = false
            let end = self.drain(clockLimit: Self.latestTime) { _, notedRuns in
                satisfied = notedRuns >= wanted
                return satisfied
            }
            switch end {
            case .runaway: return .failed(.runawayTasks(limit: self.runawayLimit))
            case .ran(let count): return satisfied ? .count(count) : .failed(.conditionNotMet)
            }
        case .verifyIdle:
            if self.pendingCount > 0 { return .failed(.pendingTasks) }
            return self.unfinishedTrackedCount > 0 ? .failed(.unfinishedTasks) : .nothing
        case .setMode(let mode):
            self.mode = mode
            return .nothing
        case .setOrder(let order):
            self.order = order
            return .nothing
        case .startTask(let script):
            self.start(script)
            return .nothing
        case .runNextAsync(let context, let waits):
            guard let id = self.chooseDue(in: context, before: .max) else {
                return .failed(.waitTimedOut(after: waits ? Self.waitLimit : .zero))
            }
            self.run(id)
            return .ran(id)
        case .valueOf(let id):
            guard let index = self.trackedIndex(startID: id) else { return .nothing }
            return .value(self.trackedTasks[index].script.steps.count)
        case .startSeries(let spec):
            self.startSeries(spec)
            return .nothing
        case .cancelAll(let scope):
            // Everything live that went through the scope is cancelled, and every later dispatch through it.
            self.scopeCancelled[scope] = true
            for task in self.pendingTasks where task.scope == scope { self.setState(.cancelled, of: task.id) }
            return .nothing
        }
    }

    /// An async drain that returned has waited for every tracked task to settle: the race is over.
    private mutating func settled(
        _ result: ModelObservation.Result,
        by operation: ModelOperation
    ) -> ModelObservation.Result {
        if operation.isAsync, case .count = result { self.racing = [] }
        return result
    }

    private mutating func dispatch(_ spec: ModelTaskSpec) {
        let id = self.nextID
        let children = spec.children.indices.map { id + 1 + $0 }
        self.tasks.append(
            Task(
                id: id, kind: .plain(spec, children: children), context: spec.context, priority: spec.priority,
                scope: spec.scope))
        for child in spec.children {
            let task = Task(
                id: self.nextID, kind: .plain(child, children: []), context: child.context, priority: child.priority,
                scope: spec.scope)
            self.tasks.append(task)
        }
        self.enqueue(id, after: spec.delay.saturatedNanoseconds)
    }

    /// Starts the series of `spec` as task `tn`: its first tick is due after the first delay (the interval when it
    /// has none; at once when zero or below), the later ones on the grid from there.
    private mutating func startSeries(_ spec: ModelSeriesSpec) {
        let id = self.nextID
        let interval = max(1, spec.interval.saturatedNanoseconds)  // under a nanosecond counts as one
        let delay = spec.delay?.saturatedNanoseconds ?? interval
        var base = self.now
        if delay > 0 {
            let (sum, overflow) = self.now.addingReportingOverflow(delay)
            base = overflow || sum > Self.latestTime ? Self.never : sum
        }
        self.tasks.append(
            Task(
                id: id, kind: .series(spec, base: base, interval: interval), context: spec.context,
                priority: spec.priority, scope: spec.scope))
        self.enqueue(id, dueAt: base)
    }

    /// The first point of a series' grid (`base` + k × `interval`, k ≥ 0) after `time`: never past the clock's range.
    static func nextTick(after time: Int64, base: Int64, interval: Int64) -> Int64 {
        guard time >= base else { return base }
        let steps = (time - base) / interval + 1
        let (offset, overflow) = steps.multipliedReportingOverflow(by: interval)
        let (due, overflow2) = base.addingReportingOverflow(offset)
        return overflow || overflow2 || due > Self.latestTime ? Self.never : due
    }

    /// Dispatches the reserved task `id` to fall due `delay` nanoseconds from now, as `dispatch(_:)` does.
    mutating func enqueue(_ id: Int, after delay: Int64) {
        var due = self.now
        if delay > 0 {
            let (sum, overflow) = self.now.addingReportingOverflow(delay)
            due = overflow || sum > Self.latestTime ? Self.never : sum
        }
        self.enqueue(id, dueAt: due)
    }

    /// Dispatches the reserved task `id` to fall due at `due` (at once if that is not later than now); through a
    /// cancelled scope, the dispatch never reaches the dispatcher: the task is cancelled, and takes no sequence.
    mutating func enqueue(_ id: Int, dueAt due: Int64) {
        if let scope = self.tasks[id - 1].scope, self.scopeCancelled[scope] {
            self.setState(.cancelled, of: id)
            self.sequenceGapsAllowed = true
            return
        }
        self.tasks[id - 1].due = due > Self.latestTime ? Self.never : max(due, self.now)
        self.tasks[id - 1].sequence = self.nextSequence
        self.tasks[id - 1].isSequenceKnown = self.knowsDispatchOrder
        if !self.knowsDispatchOrder && self.firstUnknownSequence == nil {
            self.firstUnknownSequence = self.nextSequence
        }
        self.setState(.pending, of: id)
        self.nextSequence += 1
    }

    private mutating func run(_ id: Int) {
        self.setState(.ran, of: id)
        self.runs.append((id, self.now))
        self.runsSinceSettledPoint.append((id, self.now))
        switch self.tasks[id - 1].kind {
        case .plain(let spec, let children):
            self.notedRunCount += 1
            if let target = spec.cancels, let task = self.task(target), task.hasHandle, task.state == .pending {
                self.setState(.cancelled, of: target)
            }
            for child in children {
                guard case .plain(let childSpec, _) = self.tasks[child - 1].kind else { continue }
                self.enqueue(child, after: childSpec.delay.saturatedNanoseconds)
            }
        case .step(let tracked):
            self.notedRunCount += 1
            self.resume(tracked)
        case .start(let tracked), .timer(let tracked):
            self.resume(tracked)
        case .series(_, let base, let interval):
            // The tick's closure notes its run; then the series dispatches the next tick.
            self.notedRunCount += 1
            self.enqueue(id, dueAt: Self.nextTick(after: self.now, base: base, interval: interval))
        }
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
    /// after a run (it gets the task and the number of noted runs so far); stops with a runaway after the tasks
    /// pending at the start plus the runaway limit.
    ///
    /// A drain to idle (`refusingSeries`) stops with a runaway, instead of jumping the clock, when the next delayed
    /// task is the tick of a live series: a series never ends by itself.
    private mutating func drain(
        clockLimit: Int64,
        refusingSeries: Bool = false,
        stop: (Task, Int) -> Bool = { _, _ in false }
    ) -> DrainEnd {
        let bound = self.pendingCount + self.runawayLimit
        var ran = 0
        self.refusedSeriesJump = false
        while true {
            if ran >= bound {
                let runnable = self.hasDueTask || (self.nextDelayedDue.map { $0 <= clockLimit } ?? false)
                return runnable ? .runaway : .ran(ran)
            }
            guard let id = self.next(jumpingClockTo: clockLimit, refusingSeries: refusingSeries) else {
                return self.refusedSeriesJump ? .runaway : .ran(ran)
            }
            self.run(id)
            ran += 1
            if stop(self.tasks[id - 1], self.notedRunCount) { return .ran(ran) }
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
            while let id = self.next(jumpingClockTo: Self.latestTime, onlyPastSeries: true) { self.run(id) }
        }
    }

    // MARK: - Choosing

    /// The dispatcher's next choice, if `allowed` holds it; otherwise notes the disallowed choice, and goes on with
    /// it if it is pending (with the first allowed task if not). Without following, the first allowed task.
    private mutating func follow(allowed: [Int]) -> Int? {
        guard let first = allowed.first else { return nil }
        guard self.follows else { return first }
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

    var hasDueTask: Bool {
        self.pendingTasks.contains { $0.due <= self.now }
    }

    /// The due tasks in `context` (`nil`: either), oldest first.
    func dueTasks(in context: TaskContext?) -> [Task] {
        self.pending.filter { $0.due <= self.now && (context == nil || $0.context == context) }
    }

    /// The next due task of any context; when nothing at all is due, the clock first jumps to the next delayed task
    /// if that falls due by `clockLimit`.
    ///
    /// `refusingSeries`: not when that task is a live series' tick (``refusedSeriesJump`` says so). `onlyPastSeries`
    /// (auto-advance): only while a task other than a series' tick, which can fall due, is pending: it stops when only
    /// live series are left.
    private mutating func next(
        jumpingClockTo clockLimit: Int64,
        refusingSeries: Bool = false,
        onlyPastSeries: Bool = false
    ) -> Int? {
        if let id = self.chooseDue(in: nil, before: .max) { return id }
        guard !self.hasDueTask, let due = self.nextDelayedDue, due <= clockLimit else { return nil }
        if refusingSeries,
            let first = self.pendingTasks.filter({ $0.due == due }).min(by: { $0.isEarlier(than: $1) }),
            first.repeatInterval != nil
        {
            self.refusedSeriesJump = true
            return nil
        }
        if onlyPastSeries && !self.pendingTasks.contains(where: { $0.repeatInterval == nil && $0.due != Self.never }) {
            return nil
        }
        self.now = due
        return self.chooseDue(in: nil, before: .max)
    }

    /// The due task the order runs next in `context` (`nil`: either), among tasks dispatched before `limit`.
    private mutating func chooseDue(in context: TaskContext?, before limit: UInt64) -> Int? {
        guard self.runs.count < self.runCap else { return nil }
        let due = self.pendingTasks.filter { $0.due <= self.now && $0.sequence < limit }
        let foreground = due.filter { $0.context == .foreground }.min { $0.isEarlier(than: $1) }
        var backgroundTasks = due.filter { $0.context == .background }
        if case .random = self.order {
            var allowed = context == .background ? [] : foreground.map { [$0.id] } ?? []
            if context != .foreground { allowed += backgroundTasks.sorted { $0.isEarlier(than: $1) }.map(\.id) }
            if self.mistake == .narrowsRandomOrder, let oldest = backgroundTasks.min(by: { $0.isEarlier(than: $1) }) {
                allowed = [oldest.id]
            }
            return self.follow(allowed: allowed)
        }
        if self.order == .priority && self.mistake != .ignoresPriority {
            let highest = backgroundTasks.map(\.priority).max()
            backgroundTasks = backgroundTasks.filter { $0.priority == highest }
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

extension ModelOperation {
    /// Whether the operation runs exactly one task (or none): a step, synchronous or async.
    var isStep: Bool {
        switch self {
        case .runNextForeground, .runNextBackground, .runNext, .runNextAsync: true
        default: false
        }
    }
}
