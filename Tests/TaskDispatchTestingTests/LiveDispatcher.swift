import Dispatch
import Foundation
import TaskDispatch

@testable import TaskDispatchTesting

/// The dispatcher side of a ``ModelRun``: a `ManualDispatcher` driven with the operations of a scenario, its tasks
/// labeled by model identity, and what ran.
///
/// The synchronous operations run on the model's own thread, as a synchronous test calls them. An async operation
/// runs in a task on the global executor while that thread waits for it: the thread is never one of the cooperative
/// pool, so blocking it holds back nothing the task needs. Tracked tasks run their bodies on their own executors.
///
/// `@unchecked Sendable`: its mutable state is in `state`, touched only under `lock`, from the model's thread, the
/// tasks the dispatcher runs (on whichever thread runs them) and the tracked tasks' bodies; `errors` only from the
/// model's thread.
final class LiveDispatcher: @unchecked Sendable {
    /// A run as noted: the task, and the virtual time it ran at.
    struct Run: Comparable, CustomStringConvertible {
        var task: Int
        var start: Int64

        static func < (lhs: Run, rhs: Run) -> Bool {
            lhs.start != rhs.start ? lhs.start < rhs.start : lhs.task < rhs.task
        }

        var description: String { "t\(self.task) at \(self.start)" }
    }

    private struct State {
        /// Runs noted by the tasks' own closures: plain tasks and tracked tasks' awaitable dispatches.
        var notedRuns: [Run] = []
        /// Runs noted by tracked tasks' bodies as they resume: their starts, and their sleeps' timers.
        var resumptions: [Run] = []
        /// How much of each list a settled point has taken.
        var notedRunsTaken = 0
        var resumptionsTaken = 0
        /// The handle of task `n` at index `n - 1`; a placeholder until it is dispatched, and for the tasks of
        /// tracked tasks, which have no handle.
        var handles: [TaskHandle] = []
        /// The tracked tasks, by the identity of their start.
        var tracked: [Int: Task<Int, any Error>] = [:]
        /// For each tracked task (by its start), the identity of each sleep it began, by its deadline: a timer is
        /// labeled after its tracked task, not `tn`, and the deadlines of one task's sleeps differ (each begins when
        /// the one before it woke, and lasts a while).
        var sleeps: [Int: [Int64: Int]] = [:]
    }

    let dispatcher: ManualDispatcher
    /// The scenario's `DispatchScope`s over the dispatcher, held for the whole run.
    let scopes: [DispatchScope]
    private let lock = NSLock()
    private var state = State()
    /// The number of errors the dispatcher threw.
    private(set) var errors = 0

    init(_ configuration: ModelScenario.Configuration) {
        self.dispatcher = ManualDispatcher(
            mode: configuration.mode,
            order: configuration.order,
            waitLimit: ReferenceScheduler.waitLimit,
            runawayLimit: configuration.runawayLimit,
            historyLimit: configuration.historyLimit
        )
        self.scopes = (0..<configuration.scopes).map { [dispatcher] _ in DispatchScope(dispatcher) }
    }

    private func withLock<Result>(_ body: (inout State) -> Result) -> Result {
        self.lock.lock()
        defer { self.lock.unlock() }
        return body(&self.state)
    }

    func apply(_ operation: ModelOperation) -> ModelObservation {
        let runsBefore = self.withLock { $0.notedRuns.count }
        let result = self.perform(operation)
        if case .failed = result { self.errors += 1 }
        let pending = self.dispatcher.pendingTasks
        let (ran, sleeps) = self.withLock { state in (state.notedRuns[runsBefore...].map(\.task), state.sleeps) }
        return ModelObservation(
            result: result,
            ran: ran,
            now: self.dispatcher.now,
            pending: pending.map { task in
                ModelObservation.Pending(
                    task: Self.id(task, sleeps: sleeps),
                    sequence: task.sequence,
                    context: task.context,
                    priority: task.context == .background ? task.priority : nil,
                    due: task.dueTime,
                    // In nanoseconds, as the reference counts (saturated: `.seconds(Int64.max)` is past `Int64`).
                    interval: task.repeatInterval.map { .nanoseconds(nanoseconds($0)) }
                )
            },
            pendingCount: self.dispatcher.pendingTaskCount,
            pendingForegroundCount: self.dispatcher.pendingTaskCount(in: .foreground),
            unfinishedTasks: self.dispatcher.unfinishedTaskCount,
            unsettledTasks: self.dispatcher.unsettledTaskCount,
            scopes: self.scopes.map { .init(liveWork: $0.liveWorkCount, isCancelled: $0.isCancelled) }
        )
    }

    private func perform(_ operation: ModelOperation) -> ModelObservation.Result {
        switch operation {
        case .dispatch(let spec):
            self.dispatch(spec)
            return .nothing
        case .cancel(let id):
            guard let handle = self.withLock({ $0.handles.indices.contains(id - 1) ? $0.handles[id - 1] : nil }) else {
                return .nothing
            }
            return .cancelled(handle.cancel())
        case .runNextForeground:
            return self.synchronously { .ran(self.id(try self.dispatcher.runNextForeground().task)) }
        case .runNextBackground:
            return self.synchronously { .ran(self.id(try self.dispatcher.runNextBackground().task)) }
        case .runNext:
            return self.synchronously { .ran(self.id(try self.dispatcher.runNext().task)) }
        case .runCurrent:
            return self.synchronously { .count(try self.dispatcher.runCurrent()) }
        case .runUntilIdle:
            return self.synchronously { .count(try self.dispatcher.runUntilIdle()) }
        case .advanceBy(let duration):
            return self.synchronously { .count(try self.dispatcher.advance(by: duration.duration)) }
        case .advanceTo(let time):
            return self.synchronously { .count(try self.dispatcher.advance(to: time.duration)) }
        case .runUntilTaskLabeled(let id):
            return self.synchronously { .ran(self.id(try self.dispatcher.run(untilTaskLabeled: "t\(id)").task)) }
        case .runUntilRunCount(let wanted):
            return self.synchronously {
                .count(try self.dispatcher.run(until: { self.withLock { $0.notedRuns.count } >= wanted }))
            }
        case .verifyIdle:
            return self.synchronously {
                try self.dispatcher.verifyIdle()
                return .nothing
            }
        case .setMode(let mode):
            self.dispatcher.mode = mode
            return .nothing
        case .setOrder(let order):
            self.dispatcher.order = order
            return .nothing
        case .startTask(let script):
            self.start(script)
            return .nothing
        case .settle:
            return self.awaiting { .count(try await $0.settle()) }
        case .runUntilIdleAsync:
            return self.awaiting { .count(try await $0.runUntilIdle()) }
        case .advanceByAsync(let duration):
            return self.awaiting { .count(try await $0.advance(by: duration.duration)) }
        case .advanceToAsync(let time):
            return self.awaiting { .count(try await $0.advance(to: time.duration)) }
        case .runNextAsync(let context, let waits):
            let limit: Duration? = waits ? nil : .zero
            return self.awaiting { dispatcher in
                let run =
                    switch context {
                    case .foreground?: try await dispatcher.runNextForeground(waitingUpTo: limit)
                    case .background?: try await dispatcher.runNextBackground(waitingUpTo: limit)
                    case nil: try await dispatcher.runNext(waitingUpTo: limit)
                    }
                return .ran(self.id(run.task))
            }
        case .valueOf(let id):
            guard let task = self.withLock({ $0.tracked[id] }) else { return .nothing }
            return self.awaiting { .value(try await $0.value(of: task)) }
        case .startSeries(let spec):
            self.startSeries(spec)
            return .nothing
        case .cancelAll(let scope):
            self.scopes[scope].cancelAll()
            return .nothing
        }
    }

    /// The result of a synchronous call, or the kind of the error it threw.
    private func synchronously(_ call: () throws -> ModelObservation.Result) -> ModelObservation.Result {
        do {
            return try call()
        } catch let error as ManualDispatcherError {
            return .failed(error.kind)
        } catch {
            return .threw(String(describing: type(of: error)))
        }
    }

    /// The result of an async call, made in a task on the global executor while this thread waits for it.
    private func awaiting(
        _ call: @escaping @Sendable (ManualDispatcher) async throws -> ModelObservation.Result
    ) -> ModelObservation.Result {
        let dispatcher = self.dispatcher
        let outcome = Outcome()
        let semaphore = DispatchSemaphore(value: 0)
        Task {
            let result: ModelObservation.Result
            do {
                result = try await call(dispatcher)
            } catch let error as ManualDispatcherError {
                result = .failed(error.kind)
            } catch {
                result = .threw(String(describing: type(of: error)))
            }
            outcome.set(result)
            semaphore.signal()
        }
        semaphore.wait()
        return outcome.result
    }

    // MARK: - Tasks

    /// Dispatches `spec` as task `tn`, the next model identity, taking the identities of its children with it.
    private func dispatch(_ spec: ModelTaskSpec) {
        let id = self.reserve(1 + spec.children.count)
        self.dispatch(spec, as: id)
    }

    /// Takes `count` identities, with placeholder handles, and returns the first.
    private func reserve(_ count: Int) -> Int {
        self.withLock { state in
            let first = state.handles.count + 1
            state.handles.append(contentsOf: repeatElement(TaskHandle(canceller: NoCanceller()), count: count))
            return first
        }
    }

    /// Dispatches `spec` as task `t<id>`; when it runs, it notes its run, cancels its target and dispatches its
    /// children, whose identities follow its own.
    private func dispatch(_ spec: ModelTaskSpec, as id: Int, through scope: Int? = nil) {
        let label = "t\(id)"
        let target: any TaskDispatcher = (spec.scope ?? scope).map { self.scopes[$0] } ?? self.dispatcher
        let handle =
            switch spec.context {
            case .background:
                target.background(priority: spec.priority, after: spec.delay.duration, label: label) {
                    self.taskRan(id, spec, through: spec.scope ?? scope)
                }
            case .foreground:
                target.foreground(after: spec.delay.duration, label: label) {
                    self.taskRan(id, spec, through: spec.scope ?? scope)
                }
            }
        // After the dispatch: an auto-drain may have run the task, and the tasks it dispatches, before it returned.
        self.withLock { $0.handles[id - 1] = handle }
    }

    /// Starts the series of `spec` as `t<n>`, the next model identity: each tick notes a run of `t<n>`.
    private func startSeries(_ spec: ModelSeriesSpec) {
        let id = self.reserve(1)
        let label = "t\(id)"
        let target: any TaskDispatcher = spec.scope.map { self.scopes[$0] } ?? self.dispatcher
        let delay = spec.delay?.duration
        let handle =
            switch spec.context {
            case .background:
                target.background(every: spec.interval.duration, priority: spec.priority, after: delay, label: label) {
                    self.noteRun(of: id)
                }
            case .foreground:
                target.foreground(every: spec.interval.duration, after: delay, label: label) {
                    self.noteRun(of: id)
                }
            }
        self.withLock { $0.handles[id - 1] = handle }
    }

    /// Task `id` ran: it notes its run, cancels its target and dispatches its children (through `scope`, if it went
    /// through one).
    private func taskRan(_ id: Int, _ spec: ModelTaskSpec, through scope: Int?) {
        self.noteRun(of: id)
        let target = self.withLock { state -> TaskHandle? in
            guard let target = spec.cancels, state.handles.indices.contains(target - 1) else { return nil }
            return state.handles[target - 1]
        }
        target?.cancel()
        for (offset, child) in spec.children.enumerated() {
            self.dispatch(child, as: id + 1 + offset, through: scope)
        }
    }

    private func noteRun(of id: Int) {
        let run = Run(task: id, start: nanoseconds(self.dispatcher.now))
        self.withLock { $0.notedRuns.append(run) }
    }

    private func noteResumption(after id: Int) {
        let run = Run(task: id, start: nanoseconds(self.dispatcher.now))
        self.withLock { $0.resumptions.append(run) }
    }

    /// Starts the tracked task of `script` as `t<n>`, its dispatching steps taking the next identities.
    private func start(_ script: ModelTrackedScript) {
        let steps = script.steps.filter(\.dispatches).count
        let id = self.reserve(1 + steps)
        var next = id
        let stepIDs = script.steps.map { step -> Int? in
            guard step.dispatches else { return nil }
            next += 1
            return next
        }
        let label = "t\(id)"
        let task =
            switch script.isolation {
            case .mainActor:
                self.dispatcher.startTask(label: label) { @MainActor in
                    try await self.runBody(of: id, script, stepIDs)
                }
            case .nonisolated:
                self.dispatcher.startTask(label: label) { try await self.runBody(of: id, script, stepIDs) }
            }
        self.withLock { $0.tracked[id] = task }
    }

    /// The body of tracked task `id`, on its operation's isolation: it notes its start, then awaits each step, and
    /// notes each sleep's timer when the sleep returns (the clock cannot move before it next waits).
    private func runBody(
        of id: Int,
        _ script: ModelTrackedScript,
        _ stepIDs: [Int?],
        isolation: isolated (any Actor)? = #isolation
    ) async throws -> Int {
        self.noteResumption(after: id)
        for (step, stepID) in zip(script.steps, stepIDs) {
            let stepID = stepID ?? 0
            switch step {
            case .background(let priority, let delay):
                try await self.dispatcher.runInBackground(
                    priority: priority, after: delay.duration, label: "t\(stepID)"
                ) {
                    self.noteRun(of: stepID)
                }
            case .mainActor(let delay):
                try await self.dispatcher.runOnMainActor(after: delay.duration, label: "t\(stepID)") {
                    self.noteRun(of: stepID)
                }
            case .sleep(let duration):
                guard step.dispatches else {
                    try await self.dispatcher.clock.sleep(for: duration.duration)
                    continue
                }
                // The virtual clock's `sleep(for:)` sleeps until its `now` advanced by the duration: the same `now`, since it
                // does not move while this task is unsettled.
                let (deadline, overflow) = nanoseconds(self.dispatcher.now).addingReportingOverflow(
                    duration.saturatedNanoseconds)
                let due = overflow || deadline > ReferenceScheduler.latestTime ? ReferenceScheduler.never : deadline
                self.withLock { $0.sleeps[id, default: [:]][due] = stepID }
                try await self.dispatcher.clock.sleep(for: duration.duration)
                self.noteResumption(after: stepID)
            }
        }
        return script.steps.count
    }

    /// Hands out the runs since the last settled point, noted by the tasks' closures and by the tracked tasks'
    /// bodies, and starts counting again.
    func takeRunsSinceSettledPoint() -> [Run] {
        self.withLock { state in
            defer {
                state.notedRunsTaken = state.notedRuns.count
                state.resumptionsTaken = state.resumptions.count
            }
            return Array(state.notedRuns[state.notedRunsTaken...]) + state.resumptions[state.resumptionsTaken...]
        }
    }

    /// The history, each run named as ``ReferenceScheduler/historyName(_:)`` names it.
    var history: [String] {
        self.dispatcher.history.map { run in
            let name = run.task.label.map { label in
                label.split(separator: ":").count > 1 ? "\(label.prefix { $0 != ":" }):sleep" : label
            }
            return "\(name ?? "?") at \(nanoseconds(run.startTime))"
        }
    }

    // MARK: - The end

    /// Cancels every pending task and every tracked task, and waits for the tracked tasks to finish: their closures
    /// hold this object, and the dispatcher goes away quietly only with nothing pending.
    ///
    /// - Returns: What cancelling left behind, if anything: a tracked task that did not finish, or pending work.
    @discardableResult
    func tearDown() -> String? {
        let (handles, tracked) = self.withLock { state in
            defer {
                state.handles = []
                state.tracked = [:]
            }
            return (state.handles, state.tracked)
        }
        for handle in handles { handle.cancel() }
        for task in tracked.values { task.cancel() }
        var problems: [String] = []
        for (id, task) in tracked.sorted(by: { $0.key < $1.key }) {
            switch self.awaiting({ .value(try await $0.value(of: task)) }) {
            case .value, .threw("CancellationError"): break
            case let other: problems.append("tracked task t\(id) ended with \(other) once cancelled")
            }
        }
        let (pending, unfinished) = (self.dispatcher.pendingTaskCount, self.dispatcher.unfinishedTaskCount)
        if pending > 0 || unfinished > 0 {
            problems.append("\(pending) pending tasks and \(unfinished) unfinished tracked tasks after cancelling all")
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    // MARK: - Identities

    /// The model identity of `task` from its label: `tn`, or for a sleep's timer, labeled `tn: clock sleep until …`
    /// after its tracked task, the sleep of that task with the timer's due time; -1 for any other label. (A loop over
    /// the bytes: the generic parse of `Int(label.dropFirst())` was a tenth of the test's time in a debug build.)
    private static func id(_ task: ManualDispatcher.PendingTask, sleeps: [Int: [Int64: Int]]) -> Int {
        guard let label = task.label else { return -1 }
        var id = 0
        var bytes = label.utf8.makeIterator()
        guard bytes.next() == UInt8(ascii: "t") else { return -1 }
        while let byte = bytes.next() {
            if byte == UInt8(ascii: ":") { return sleeps[id]?[nanoseconds(task.dueTime)] ?? -1 }
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return -1 }
            id = id * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return id
    }

    private func id(_ task: ManualDispatcher.PendingTask) -> Int {
        Self.id(task, sleeps: self.withLock { $0.sleeps })
    }
}

/// The placeholder handle of a task whose dispatch has not returned yet, or that has no handle.
private struct NoCanceller: TaskCancelling {
    func cancelTask() -> Bool { false }
    var isTaskCancelled: Bool { false }
}

/// The result of an async call, handed from its task to the waiting thread.
///
/// `@unchecked Sendable`: `stored` is touched only under `lock`.
private final class Outcome: @unchecked Sendable {
    private let lock = NSLock()
    private var stored = ModelObservation.Result.nothing

    func set(_ result: ModelObservation.Result) {
        self.lock.lock()
        defer { self.lock.unlock() }
        self.stored = result
    }

    var result: ModelObservation.Result {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.stored
    }
}
