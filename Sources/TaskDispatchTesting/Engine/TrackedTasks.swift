import TaskDispatch

/// The Swift tasks a ``ManualDispatcher`` started with `startTask`, until they finish, and the errors they threw that
/// nobody claimed; never touched by a plain dispatch or a step.
struct TrackedTasks: Sendable {
    enum Phase: Sendable {
        /// Its start is a pending task on the dispatcher.
        case waitingToStart
        /// Its start has run and its operation has not yet returned.
        case running
        /// It was cancelled before its start ran, and its start with it: its body is about to end on its own.
        case startCancelled
        /// It threw an error that nobody has claimed yet.
        case failed
    }

    /// Whether the dispatcher counts the jobs of a task's child tasks (the scope as a `TaskExecutor`), and if not, why.
    enum ChildJobs: Sendable {
        /// A nonisolated task where the runtime has task executors: its child tasks prefer the task's executor.
        case counted
        /// A task isolated to an actor (the main actor included): its child tasks prefer no executor.
        case uncountedInIsolatedTask
        /// A nonisolated task where the runtime has no task executors (before macOS 15, iOS 18).
        case uncountedWithoutTaskExecutors
        /// A nonisolated task in which another task waited from under a task executor preference of its own: that
        /// task's jobs, and its children's, run there.
        case uncountedUnderAnotherExecutor
        /// A nonisolated task in which a `Task { }` it created (or a library's code it calls created) waited: such a
        /// task inherits no executor preference, so its jobs, and its children's, run on the global executor.
        case uncountedInUnstructuredTask
    }

    /// A task inside a counted tracked task that waits off the tracked task's executor: its address, and why its jobs
    /// run uncounted (``ChildJobs/uncountedUnderAnotherExecutor`` or ``ChildJobs/uncountedInUnstructuredTask``).
    struct WaiterOffTheExecutor: Sendable {
        let address: UInt
        let childJobs: ChildJobs
    }

    /// Where a record's own fields place its task (``Record/standing``).
    enum Standing: Sendable {
        case settled, unsettled
        /// Its task's cancellation flag, or the tracked tasks it awaits, decide (``isSettled(_:)``).
        case undecided
    }

    /// Whether another task inside a tracked task whose child jobs are not counted was seen to wait on the dispatcher.
    enum UncountedTasks: Sendable {
        case unseen
        /// Seen, and not yet reported by a drain that would have relied on the task being settled.
        case seen
        /// Reported once: the drains go on as before.
        case reported
    }

    struct Record: Sendable {
        let id: UInt64
        let label: String?
        let callSite: CallSite
        /// Whether its operation is isolated to the main actor, so it cannot run while a synchronous caller holds it.
        var isOnMainActor = false
        var childJobs = ChildJobs.counted
        var uncountedTasks = UncountedTasks.unseen
        var phase = Phase.waitingToStart
        /// Whether its body has reached the start gate, whose cancellation handler reports a cancel from then on.
        var isParked = false
        /// How many `value(of:)` calls await it: while one does, its error reaches whoever awaits it.
        var claims = 0
        /// The task, as the key `value(of:)` finds it by (in ``TrackedTasks/keys`` once it first looks one up); `nil`
        /// until `startTask` registers it.
        var key: TrackedTaskKey?
        /// The error it threw, as the report shows it, while nobody has claimed it (``Phase/failed``).
        var error: String?
        var failedAfterDrains: UInt64 = 0
        /// How many waits on the dispatcher's own work (an awaitable dispatch, a sleep) the task or a child is in.
        var ownedWaits = 0
        /// How many jobs of the task, its child tasks or a default actor they entered are on its executor (always 0
        /// without one): while one is, the task is not settled.
        var runningJobs = 0
        /// The tracked tasks whose value this one, or a child task of it, awaits through `value(of:)`, one per await.
        var awaiting: [UInt64] = []
        /// The last thing the dispatcher saw the task do, for the error that names it when it does not settle.
        var lastSeen = Event.created
        /// The clock's time when its start ran.
        var startedAt: Int64 = 0
        var wokenAt: UInt64 = 0
        /// How many sleeps and awaitable dispatches of the task in a row ended at once: two or more, and the task
        /// loops on them, which never settles.
        var immediateReturns = 0
    }

    /// The last thing the dispatcher saw a tracked task do; turned into text only for an error.
    enum Event: Sendable, CustomStringConvertible {
        case created
        case started(at: Int64)
        case awaited(String)
        case resumed(after: String)
        case awaitedValue(of: String)
        case gotValue
        /// It was cancelled while its start was pending, and its start with it.
        case startCancelled
        /// A wait on the dispatcher's work ended with `CancellationError`: the task was cancelled.
        case waitCancelled(String)
        /// A sleep on a dispatcher's clock returned at once, its deadline come, or threw in a `cancelled` task.
        case sleptWithoutSuspending(until: String, cancelled: Bool)

        var description: String {
            switch self {
            case .created: "it was started; its start is pending on the dispatcher"
            case .started(let time): "its start ran at \(formatTime(time)) and its operation began"
            case .awaited(let what): "it awaited \(what)"
            case .resumed(let what): "it resumed after \(what)"
            case .awaitedValue(let task): "it awaited the value of \(task) with value(of:)"
            case .gotValue: "it resumed with the value it awaited with value(of:)"
            case .startCancelled:
                "it was cancelled before its start ran, so its start was cancelled and it is about to end with CancellationError"
            case .waitCancelled(let what): "its wait on \(what) ended with CancellationError"
            case .sleptWithoutSuspending(let deadline, false):
                "it slept on the dispatcher's clock until \(deadline), a time that had come, so the sleep returned at once without suspending"
            case .sleptWithoutSuspending(let deadline, true):
                "it slept on the dispatcher's clock until \(deadline), and the sleep threw CancellationError at once"
            }
        }
    }

    /// A tracked task that has not settled, as the error that names it shows it.
    struct UnsettledTask: Sendable {
        /// Its record's number in this dispatcher (see ``ManualDispatcherError/listedTrackedTasks``).
        let id: UInt64
        let label: String?
        let callSite: CallSite
        /// Whether the task was cancelled (and goes on after it, or is about to end).
        var isCancelled = false
        /// Whether it loops on sleeps and awaitable dispatches that end at once (see ``Record/immediateReturns``).
        var keepsRunning = false
        /// Whether it waits only on the dispatcher, or on tracked tasks that do (see ``isSettled(_:)``).
        var isSettled = true
        let lastSeen: String
        /// The tracked tasks it awaits through `value(of:)`, if any, and how they stand.
        let awaiting: String?
        /// What a listing shows of where it stands: whether it was cancelled, its last event, and what it awaits.
        var standing: String { "\(self.isCancelled) \(self.lastSeen) \(self.awaiting ?? "")" }
    }

    /// Which unclaimed errors a call reports. An async drain leaves those it sees to the next call, so that the test
    /// can still claim them with `value(of:)` after it returns.
    enum ErrorsToReport: Sendable {
        /// Every one: `verifyIdle()`, a release, a step or a synchronous drain (none of which waits for tracked tasks).
        case all
        /// Those thrown before an earlier async drain ended: the first claim of an async drain.
        case seenByAnEarlierDrain
        /// None: a call that claims the run again after a wait of its own.
        case none
    }

    /// A tracked task whose child tasks the dispatcher cannot count, as the error that names it shows it.
    struct TaskWithUncountedTasks: Sendable {
        /// Where the task runs, which says why its child tasks are not counted.
        enum Isolation: Sendable {
            case mainActor
            /// Another actor.
            case actor
            /// Nonisolated, where the runtime has no task executors.
            case nonisolatedWithoutTaskExecutors
            /// Nonisolated, with a task inside it that prefers another task executor.
            case underAnotherExecutor
            /// Nonisolated, with a `Task { }` inside it, which prefers no task executor.
            case inUnstructuredTask
        }

        /// `tracked task "load" (Feed.swift:12)`.
        let name: String
        let isolation: Isolation
        /// Whether the task finished before a drain reported it, with the clock moved since its start.
        var finishedAfterTheClockMoved = false
    }

    /// An error a tracked task threw that nobody claimed.
    struct UnobservedError: Sendable {
        let label: String?
        let callSite: CallSite
        let error: String
    }

    /// Called after a tracked task's body parked at its start gate, before it suspends; for the package's own tests.
    var gateParkingObserver: (@Sendable () -> Void)?
    /// Tasks that have not finished, and failed ones whose error is unclaimed, by identity (handed out in order).
    private(set) var records = Records()
    /// The addresses of the last 64 tasks whose records were dropped as they finished (see ``finishedRecently(_:)``),
    /// written round from `nextFinished`.
    private var recentlyFinished = [UInt](repeating: 0, count: 64)
    private var nextFinished = 0
    /// How many times a tracked task was woken (its start ran, or a wait ended): a synchronous drain, which cannot
    /// wait for a task it woke, compares it before it moves the clock.
    private(set) var wakeups: UInt64 = 0
    /// ``wakeups`` when an async call of the test last waited for tracked work: a wait met for a dispatch, a task's end
    /// or settling (`DispatchWaiters.Condition.awaitsTrackedWork`), or an async drain's that reached its limit. A
    /// synchronous drain, which cannot wait, does not move the clock while a task woken since may still run
    /// (``Schedule/clockHeld(_:since:)``).
    private(set) var awaitedWakeups: UInt64 = 0
    /// The registered tasks' identities by key, filled from ``unindexed`` when `value(of:)` looks a key up.
    private(set) var keys: [TrackedTaskKey: UInt64] = [:]
    /// Tasks registered since ``keys`` was last filled (some may have finished since).
    private(set) var unindexed: [UInt64] = []
    /// Failed tasks whose error nobody claimed, oldest first.
    private(set) var unobserved: [UInt64] = []
    /// Whether a record may have seen uncounted tasks wait and not reported it yet: false only once a look found none.
    private(set) var uncountedTasksSeen = false
    /// How many async drains have ended, counting from zero (see ``ErrorsToReport``).
    private(set) var drainsEnded: UInt64 = 0

    var unfinishedCount: Int { self.records.count - self.unobserved.count }

    mutating func begin(
        label: String?, callSite: CallSite, onMainActor: Bool = false, childJobs: ChildJobs = .counted
    ) -> UInt64 {
        self.records.insert { id in
            Record(id: id, label: label, callSite: callSite, isOnMainActor: onMainActor, childJobs: childJobs)
        }
    }

    /// Notes the task `key` as tracked task `id`, unless it has already finished cleanly.
    mutating func register(_ key: TrackedTaskKey, id: UInt64) {
        // Unknown: it finished before its key was known.
        guard self.records.update(id, { $0.key = key }) != nil else { return self.noteFinished(key) }
        self.unindexed.append(id)
        if self.unindexed.count >= 64, self.unindexed.count > 2 * self.records.count {
            // Nobody looks keys up: drop the finished tasks, so the list stays within twice the records.
            let records = self.records
            self.unindexed.removeAll { records[$0] == nil }
        }
    }

    /// Its start ran: from here until it waits on the dispatcher or finishes, the task runs on its own.
    mutating func markStarted(_ id: UInt64, at time: Int64) {
        self.wake(id, .started(at: time)) { record in
            record.phase = .running
            record.startedAt = time
        }
    }

    /// The body of task `id` reached its start gate (see ``Record/isParked``).
    mutating func markParked(_ id: UInt64) { self.records.update(id) { $0.isParked = true } }

    /// Whether task `id`'s Swift task is cancelled (`false` before it is registered: nobody could cancel it yet).
    func isTaskCancelled(_ id: UInt64) -> Bool { self.records[id]?.key?.isCancelled ?? false }

    /// Task `id` was cancelled before its start ran, and its start with it: its body runs on its own to its end.
    mutating func markStartCancelled(_ id: UInt64) { self.saw(id, .startCancelled) { $0.phase = .startCancelled } }

    /// Task `id`, or (`byAnotherTask`) a child task of it or a task it created, is about to suspend until the
    /// dispatcher runs `description`; `offTheExecutor` is the waiting task if it prefers a task executor other than the
    /// tracked task's, or none.
    mutating func ownedWaitBegan(
        _ id: UInt64, on description: String, byAnotherTask: Bool = false,
        offTheExecutor: WaiterOffTheExecutor? = nil
    ) {
        self.saw(id, .awaited(description), byAnotherTask: byAnotherTask, offTheExecutor: offTheExecutor) {
            $0.ownedWaits += 1
        }
    }

    /// Changes record `id` as `change` says, and keeps `seen` as the last thing its task did. A wait begun by another
    /// task inside it (`byAnotherTask`, or a task other than the tracked task off its executor) is seen
    /// if its child jobs are not counted (``takeTaskWithUncountedTasks()``).
    @inline(__always)
    private mutating func saw(
        _ id: UInt64, _ seen: Event, byAnotherTask: Bool = false, offTheExecutor: WaiterOffTheExecutor? = nil,
        _ change: (inout Record) -> Void
    ) {
        let uncounted = self.records.update(id) { record in
            change(&record)
            record.lastSeen = seen
            var byAnotherTask = byAnotherTask
            // A counted task knows only its own address (its key, once startTask registered it): a wait of any other
            // task off its executor means that that task's jobs, and its children's, go uncounted.
            if let offTheExecutor, record.childJobs == .counted, let key = record.key,
                key.address != offTheExecutor.address
            {
                record.childJobs = offTheExecutor.childJobs
                byAnotherTask = true
            }
            guard byAnotherTask, record.childJobs != .counted, record.uncountedTasks == .unseen else { return false }
            record.uncountedTasks = .seen
            return true
        }
        if uncounted == true { self.uncountedTasksSeen = true }
    }

    /// The wait on `description` ended, with `CancellationError` if `cancelled`: the task is about to run again.
    mutating func ownedWaitEnded(_ id: UInt64, on description: String, cancelled: Bool = false) {
        self.wake(id, cancelled ? .waitCancelled(description) : .resumed(after: description)) { record in
            record.ownedWaits -= 1
            record.immediateReturns = cancelled ? record.immediateReturns + 1 : 0
        }
    }

    /// Task `id` was cancelled before its wait on `description` began: the wait threw at once.
    mutating func waitEndedAtOnce(_ id: UInt64, on description: String) {
        self.returnedAtOnce(id, .waitCancelled(description))
    }

    /// A sleep or awaitable dispatch of task `id` ended at once, as `seen` says, with no wait on the dispatcher.
    mutating func returnedAtOnce(_ id: UInt64, _ seen: Event) { self.saw(id, seen) { $0.immediateReturns += 1 } }

    /// A job of task `id`, of a child task of it, or of an actor one of them entered, was enqueued on its executor.
    mutating func jobEnqueued(_ id: UInt64) { self.records.update(id) { $0.runningJobs += 1 } }

    /// That job has run: the code it ran has suspended or finished.
    mutating func jobRan(_ id: UInt64) { self.records.update(id) { $0.runningJobs -= 1 } }

    /// Task `id`, or (`byAnotherTask`) a task inside it, began to await tracked task `other` through `value(of:)`;
    /// `offTheExecutor` as for ``ownedWaitBegan(_:on:byAnotherTask:offTheExecutor:)``.
    mutating func beginAwaiting(
        _ id: UInt64, _ other: UInt64, byAnotherTask: Bool = false, offTheExecutor: WaiterOffTheExecutor? = nil
    ) {
        let seen = Event.awaitedValue(of: self.name(other))
        self.saw(id, seen, byAnotherTask: byAnotherTask, offTheExecutor: offTheExecutor) {
            $0.awaiting.append(other)
        }
    }

    /// One await of task `id` on the value of `other`, which ``beginAwaiting(_:_:)`` recorded, ended.
    mutating func endAwaiting(_ id: UInt64, _ other: UInt64) {
        self.saw(id, .gotValue) { record in
            if let index = record.awaiting.firstIndex(of: other) { record.awaiting.remove(at: index) }
            record.immediateReturns = 0  // it waited on another tracked task
        }
    }

    /// The oldest tracked task that was cancelled and has not finished (failed ones aside), if any, in O(n).
    var firstCancelledUnfinished: UInt64? {
        self.records.all.filter { $0.phase != .failed && $0.key?.isCancelled == true }.map(\.id).min()
    }

    /// Whether tracked task `id` has finished: forgotten, or failed with an error nobody has claimed yet.
    func hasFinished(_ id: UInt64) -> Bool { self.records[id].map { $0.phase == .failed } ?? true }

    /// The identity of the tracked task `key`, if it has not finished, indexing the tasks registered since the last
    /// look-up first: O(1) amortized.
    mutating func id(of key: TrackedTaskKey) -> UInt64? {
        for id in self.unindexed {
            if let registered = self.records.update(id, { $0.key }) ?? nil { self.keys[registered] = id }
        }
        self.unindexed.removeAll(keepingCapacity: true)
        return self.keys[key]
    }

    // MARK: - Settling

    /// Whether task `id` is settled: finished, failed, waiting for its start and not cancelled, or, with no job of it
    /// running (nor about to: a child task before its first wait), suspended on the dispatcher's own work or awaiting
    /// only settled tracked tasks that have not finished (a failed one resumes it).
    func isSettled(_ id: UInt64) -> Bool {
        var known: [UInt64: Bool] = [:]
        return self.isSettled(id, known: &known)
    }

    /// ``isSettled(_:)``, with the answers found so far in `known`: a walk of the awaited tasks, each looked at once
    /// and without recursion, since a chain of `value(of:)` has no bound and tasks may await one task many times. A
    /// task met again while its own answer is still being found awaits itself (a cycle, which never ends): unsettled.
    private func isSettled(_ root: UInt64, known: inout [UInt64: Bool]) -> Bool {
        if let answer = self.answer(root, known: known) { return answer }
        var path: [(id: UInt64, next: Int)] = [(root, 0)]
        known[root] = false  // until its answer is found
        var answer = true  // the last answer found, for the task on top of the path
        while let (id, next) = path.last {
            let awaiting = self.records[id]?.awaiting ?? []
            if answer, next < awaiting.count {
                path[path.count - 1].next += 1
                let awaited = awaiting[next]
                if self.hasFinished(awaited) {
                    answer = false
                } else if let decided = self.answer(awaited, known: known) {
                    answer = decided
                } else {
                    known[awaited] = false
                    path.append((awaited, 0))
                }
            } else {
                known[id] = answer
                path.removeLast()
            }
        }
        return answer
    }

    /// Task `id`'s answer from its own record, or from `known`: `nil` for an undecided task not looked at yet.
    private func answer(_ id: UInt64, known: [UInt64: Bool]) -> Bool? {
        guard let record = self.records[id] else { return true }  // finished: forgotten
        switch record.standing {
        case .settled: return true
        case .unsettled: return false
        case .undecided where record.phase == .waitingToStart: return !(record.key?.isCancelled ?? false)
        case .undecided: return known[id]
        }
    }

    /// The number of tracked tasks that are not settled: O(1) while no record is undecided (``Standing``), else
    /// derived from the records in O(n + awaits).
    var unsettledCount: Int {
        guard self.records.undecided > 0 else { return self.records.unsettled }
        var known: [UInt64: Bool] = [:]
        return self.records.ids.reduce(0) { $0 + (self.isSettled($1, known: &known) ? 0 : 1) }
    }

    /// How many unsettled tracked tasks were cancelled: O(n), unless none is unsettled.
    var unsettledCancelledCount: Int {
        guard self.records.unsettled + self.records.undecided > 0 else { return 0 }
        return self.records.ids.reduce(0) { $0 + (self.wasCancelled($1) && !self.isSettled($1) ? 1 : 0) }
    }

    /// Whether task `id` was cancelled: its task says so, or its start was cancelled with it.
    private func wasCancelled(_ id: UInt64) -> Bool {
        self.records[id].map { $0.phase == .startCancelled || ($0.key?.isCancelled ?? false) } ?? false
    }

    /// The tracked tasks that were cancelled and are not settled, oldest first.
    var unsettledCancelled: [UnsettledTask] { self.describe { self.wasCancelled($0) && !self.isSettled($0) } }

    /// The tracked tasks that are not settled, oldest first.
    var unsettled: [UnsettledTask] { self.describe { !self.isSettled($0) } }

    /// A running tracked task in which another task waited on the dispatcher while its child jobs are not counted (so
    /// its records cannot tell whether it has settled), handed out once. O(n).
    mutating func takeTaskWithUncountedTasks() -> TaskWithUncountedTasks? {
        guard self.uncountedTasksSeen else { return nil }
        let found = self.records.all.filter { $0.uncountedTasks == .seen && $0.phase == .running }
        guard let record = found.min(by: { $0.id < $1.id }) else {
            self.uncountedTasksSeen = false  // a record sees them only while it runs
            return nil
        }
        self.records.update(record.id) { $0.uncountedTasks = .reported }
        return self.describeUncounted(record)
    }

    private func describeUncounted(_ record: Record, finished: Bool = false) -> TaskWithUncountedTasks {
        let isolation: TaskWithUncountedTasks.Isolation =
            switch record.childJobs {
            case .uncountedInIsolatedTask: record.isOnMainActor ? .mainActor : .actor
            case .counted, .uncountedWithoutTaskExecutors: .nonisolatedWithoutTaskExecutors
            case .uncountedUnderAnotherExecutor: .underAnotherExecutor
            case .uncountedInUnstructuredTask: .inUnstructuredTask
            }
        return TaskWithUncountedTasks(
            name: self.name(record.id), isolation: isolation, finishedAfterTheClockMoved: finished)
    }

    /// The unsettled tracked tasks that need the main actor, oldest first.
    var unsettledOnMainActor: [UnsettledTask] { self.describe { self.needsMainActor($0) } }

    /// Whether task `id` is unsettled and isolated to the main actor, and not merely awaiting (through
    /// `value(of:)`) another tracked task that is unsettled on its own executor.
    private func needsMainActor(_ id: UInt64) -> Bool {
        guard let record = self.records[id], record.isOnMainActor, !self.isSettled(id) else { return false }
        return record.awaiting.isEmpty || record.awaiting.contains { self.hasFinished($0) }
    }

    /// Notes that an async call waited for the tracked tasks (see ``awaitedWakeups``).
    mutating func waitedForWokenTasks() { self.awaitedWakeups = self.wakeups }

    /// The unfinished tracked tasks woken after ``wakeups`` read `mark`, oldest first.
    func woken(since mark: UInt64) -> [UnsettledTask] { self.describe { (self.records[$0]?.wokenAt ?? 0) > mark } }

    /// The tracked tasks that have not finished, oldest first, but `excluded` (the one a release happens on).
    func unfinished(excluding excluded: UInt64? = nil) -> [UnsettledTask] {
        self.describe { $0 != excluded && self.records[$0]?.phase != .failed }
    }

    /// How tracked task `id` stands, as an error shows it; `nil` once it has finished.
    func standing(of id: UInt64) -> UnsettledTask? { self.records[id].map(self.describe) }

    /// The records `include` picks, oldest first, as an error shows them.
    private func describe(where include: (UInt64) -> Bool) -> [UnsettledTask] {
        self.records.ids.filter(include).sorted().compactMap { self.records[$0].map(self.describe) }
    }

    private func describe(_ record: Record) -> UnsettledTask {
        UnsettledTask(
            id: record.id, label: record.label, callSite: record.callSite, isCancelled: self.wasCancelled(record.id),
            keepsRunning: record.immediateReturns >= 2, isSettled: self.isSettled(record.id),
            lastSeen: record.lastSeen.description,
            awaiting: record.awaiting.isEmpty
                ? nil : record.awaiting.map { self.awaitedStanding($0) }.joined(separator: "; and it awaits "))
    }

    /// How awaited task `id` stands, as ``UnsettledTask/awaiting`` shows it.
    private func awaitedStanding(_ id: UInt64) -> String {
        guard let task = self.records[id] else { return "a tracked task that has finished (its value is on its way)" }
        return self.isSettled(id)
            ? "\(self.name(id)), which is settled: last seen, \(task.lastSeen.description)"
            : "\(self.name(id)), which has not settled either"
    }

    /// `tracked task "load" (Feed.swift:12)`, or `a tracked task that has finished`.
    func name(_ id: UInt64) -> String {
        guard let record = self.records[id] else { return "a tracked task that has finished" }
        return "tracked task \(quoted(record.label)) (\(record.callSite))"
    }

    /// Ends tracking of `id`; keeps a thrown error (other than cancellation) for the next check, unless claimed.
    /// Returns the task if uncounted tasks waited in it, unreported, and the clock moved after it started (`now`): no
    /// drain sees its record again, and the clock may have passed such a task before its first wait.
    @discardableResult
    mutating func finish(_ id: UInt64, error: (any Error)?, now: Int64) -> TaskWithUncountedTasks? {
        // Read and changed in place: a copy of the record would retain and release its task, from the task's thread.
        var late: TaskWithUncountedTasks?
        if self.uncountedTasksSeen, self.reportsUncountedTasksLate(id, now: now), let record = self.records[id] {
            late = self.describeUncounted(record, finished: true)
        }
        guard let error, !(error is CancellationError), self.records.update(id, { $0.claims }) == 0 else {
            self.forget(id)
            return late
        }
        let drainsEnded = self.drainsEnded
        self.records.update(id) { record in
            record.phase = .failed
            record.error = Self.describe(error)
            record.failedAfterDrains = drainsEnded
        }
        self.unobserved.append(id)
        return late
    }

    /// Whether uncounted tasks waited in task `id`, unreported, and it started before `now`: it marks them reported.
    private mutating func reportsUncountedTasksLate(_ id: UInt64, now: Int64) -> Bool {
        self.records.update(id) { record in
            guard record.uncountedTasks == .seen, record.startedAt < now else { return false }
            record.uncountedTasks = .reported
            return true
        } ?? false
    }

    /// An error qualified by its type: `LoadError.offline`, `ParseError(line: 3)`, `offline (ServerError)`.
    static func describe(_ error: any Error) -> String {
        let type = String(describing: Swift.type(of: error))
        let text = String(describing: error)
        if text.hasPrefix(type) || text.hasSuffix(".\(type)") { return text }
        // Through `Any`: the compiler reads an `any Error` as always `CustomStringConvertible`; its value may not be.
        let value: Any = error
        if !(value is any CustomStringConvertible), Mirror(reflecting: error).displayStyle == .enum {
            return "\(type).\(text)"
        }
        return "\(text) (\(type))"
    }

    /// Claims the error of the task `key`, if it throws one: a `value(of:)` call awaits it.
    mutating func claim(_ key: TrackedTaskKey) {
        guard let id = self.id(of: key), let record = self.records[id] else { return }
        if record.phase == .failed {
            self.unobserved.removeAll { $0 == id }
            self.forget(id)
        } else {
            self.records.update(id) { $0.claims += 1 }
        }
    }

    /// Gives back a claim that `value(of:)` did not see through, so that an error thrown later is reported.
    mutating func unclaim(_ key: TrackedTaskKey) {
        guard let id = self.id(of: key), self.records[id]?.phase != .failed else { return }
        self.records.update(id) { $0.claims = Swift.max(0, $0.claims - 1) }
    }

    /// An async drain ended: the errors thrown until now are reported by the next call (see ``ErrorsToReport``).
    mutating func drainEnded() { self.drainsEnded &+= 1 }

    /// Hands out the unclaimed errors of `which` kind, oldest first, and forgets them.
    mutating func takeUnobserved(_ which: ErrorsToReport = .all) -> [UnobservedError] {
        guard which != .none else { return [] }
        let taken = self.unobserved.compactMap { self.records[$0] }
            .filter { which == .all || $0.failedAfterDrains < self.drainsEnded }
        let ids = Set(taken.map(\.id))
        self.unobserved.removeAll { ids.contains($0) }
        for record in taken { self.forget(record.id) }
        return taken.map { UnobservedError(label: $0.label, callSite: $0.callSite, error: $0.error ?? "") }
    }

    private mutating func forget(_ id: UInt64) {
        if let key = self.records.remove(id) {
            if !self.keys.isEmpty { self.keys.removeValue(forKey: key) }  // no hashing until `value(of:)` looks one up
            self.noteFinished(key)
        }
    }

    private mutating func noteFinished(_ key: TrackedTaskKey) {
        self.recentlyFinished[self.nextFinished] = key.address
        self.nextFinished = (self.nextFinished + 1) % self.recentlyFinished.count
    }

    /// Whether the task of `key` is one of this dispatcher's that finished lately (by address only: a foreign task at a
    /// freed one's address reads as finished, and `value(of:)` awaits it without its bound).
    func finishedRecently(_ key: TrackedTaskKey) -> Bool { self.recentlyFinished.contains(key.address) }

    /// Counts a wake-up of task `id` (see ``wakeups``), marks its record with it, and changes the record as
    /// ``saw(_:_:byAnotherTask:_:)`` does.
    private mutating func wake(_ id: UInt64, _ seen: Event, _ change: (inout Record) -> Void) {
        self.wakeups &+= 1
        let wakeups = self.wakeups
        self.saw(id, seen) { record in
            change(&record)
            record.wokenAt = wakeups
        }
    }
}

/// A `Task`'s identity, for `value(of:)`: every `Task` is a frozen struct around one reference, so held as a
/// `Task<Never, Never>` it hashes without boxing, and keeps its object (and address) alive.
struct TrackedTaskKey: Hashable, Sendable {
    private let task: Task<Never, Never>

    init<Success, Failure>(_ task: Task<Success, Failure>) {
        self.task = unsafeBitCast(task, to: Task<Never, Never>.self)
    }

    var isCancelled: Bool { self.task.isCancelled }

    /// The task's address, to recognize it without retaining it.
    var address: UInt { unsafeBitCast(self.task, to: UInt.self) }
}

extension Schedule {
    /// The failure reporting a tracked task whose settling the records cannot tell, since other tasks inside it wait
    /// on the dispatcher uncounted (see ``TrackedTasks/takeTaskWithUncountedTasks()``), once; `nil` if none.
    mutating func uncountedTasksFailure(method: String) -> Failure? {
        guard let task = self.tracked.takeTaskWithUncountedTasks() else { return nil }
        return self.failure(.uncountedTasks(method: method, task: task))
    }

    /// The failure reporting the unclaimed errors of tracked tasks of `which` kind, which it hands out once; `nil`
    /// if none.
    mutating func unobservedErrorsFailure(method: String, _ which: TrackedTasks.ErrorsToReport = .all) -> Failure? {
        guard !self.tracked.unobserved.isEmpty else { return nil }
        let errors = self.tracked.takeUnobserved(which)
        guard !errors.isEmpty else { return nil }
        return self.failure(.unobservedTaskErrors(method: method, errors: errors))
    }
}
