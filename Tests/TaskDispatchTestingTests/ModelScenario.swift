import TaskDispatch
import TaskDispatchTesting

/// One sequence of operations the model-based test runs against both ``ReferenceScheduler`` and a
/// `ManualDispatcher`: how the dispatcher is made, then what the test does to it.
struct ModelScenario: Sendable, CustomStringConvertible {
    /// How the dispatcher is created.
    struct Configuration: Sendable, CustomStringConvertible {
        var mode: ManualDispatcher.Mode
        var order: ManualDispatcher.Order
        var runawayLimit: Int
        var historyLimit: Int
        /// How many `DispatchScope`s over the dispatcher the sequence uses (`scopes[0]`, `scopes[1]`).
        var scopes = 0

        var description: String {
            let dispatcher =
                "ManualDispatcher(mode: .\(self.mode), order: .\(self.order), runawayLimit: \(self.runawayLimit), historyLimit: \(self.historyLimit))"
            guard self.scopes > 0 else { return dispatcher }
            let scopes = Array(repeating: "DispatchScope(dispatcher)", count: self.scopes).joined(separator: ", ")
            return "\(dispatcher); let scopes = [\(scopes)]"
        }
    }

    var configuration: Configuration
    var operations: [ModelOperation]

    /// The configuration, then the operations numbered from 1, one a line: what a failure prints to replay by hand.
    var description: String {
        var lines = ["let dispatcher = \(self.configuration)"]
        for (index, operation) in self.operations.enumerated() {
            lines.append("/* \(index + 1) */ \(operation)")
        }
        return lines.joined(separator: "\n")
    }
}

/// A duration as a scenario writes it, so that the reference can read it in nanoseconds without converting.
enum ModelDuration: Sendable, Hashable, CustomStringConvertible {
    case nanoseconds(Int64)
    /// `.seconds(Int64.max)`: about 292 billion years, past the clock's range.
    case longest
    /// `.seconds(Int64.min)`.
    case mostNegative

    var duration: Duration {
        switch self {
        case .nanoseconds(let value): .nanoseconds(value)
        case .longest: .seconds(Int64.max)
        case .mostNegative: .seconds(Int64.min)
        }
    }

    /// The duration in nanoseconds, saturating at the ends of `Int64` as the dispatcher reads it.
    var saturatedNanoseconds: Int64 {
        switch self {
        case .nanoseconds(let value): value
        case .longest: .max
        case .mostNegative: .min
        }
    }

    var description: String {
        switch self {
        case .nanoseconds(0): ".zero"
        case .nanoseconds(let value): ".nanoseconds(\(value))"
        case .longest: ".seconds(Int64.max)"
        case .mostNegative: ".seconds(Int64.min)"
        }
    }
}

/// A task a scenario dispatches: its context, priority and delay, and the tasks it dispatches when it runs.
///
/// Its children's model identities are taken when it is dispatched, right after its own (`t4`'s two children are
/// `t5` and `t6`), so they do not depend on the order in which tasks run.
struct ModelTaskSpec: Sendable, CustomStringConvertible {
    var context: TaskContext
    var priority: BackgroundPriority
    var delay: ModelDuration
    /// Dispatched, in order, by the task when it runs (one level: children have none).
    var children: [ModelTaskSpec] = []
    /// A task this one cancels through its handle when it runs, before dispatching its children: cancellation
    /// during a run (itself, a pending task, or one that has run).
    var cancels: Int?
    /// The `DispatchScope` the task is dispatched through (`scopes[n]`), its children too; `nil`: the dispatcher.
    var scope: Int?

    var description: String {
        let call =
            switch self.context {
            case .background: "background(priority: .\(self.priority), after: \(self.delay))"
            case .foreground: "foreground(after: \(self.delay))"
            }
        let body = (self.cancels.map { ["handle(t\($0)).cancel()"] } ?? []) + self.children.map(\.description)
        guard !body.isEmpty else { return call }
        return "\(call) { \(body.joined(separator: "; ")) }"
    }

    /// The receiver of the call: the dispatcher, or the scope the task goes through.
    var target: String {
        self.scope.map { "scopes[\($0)]" } ?? "dispatcher"
    }
}

/// A repeating series a scenario starts with `background(every:priority:after:label:_:)` or
/// `foreground(every:after:label:_:)`: every tick's closure notes a run of the series' identity, `tn`; its handle,
/// `handle(tn)`, stops it.
struct ModelSeriesSpec: Sendable, CustomStringConvertible {
    var context: TaskContext
    var priority: BackgroundPriority
    var interval: ModelDuration
    /// The first delay; `nil`: the default, one interval.
    var delay: ModelDuration?
    /// The `DispatchScope` the series is started through; `nil`: the dispatcher.
    var scope: Int?

    var description: String {
        let target = self.scope.map { "scopes[\($0)]" } ?? "dispatcher"
        let delay = self.delay.map { ", after: \($0)" } ?? ""
        return switch self.context {
        case .background: "\(target).background(every: \(self.interval), priority: .\(self.priority)\(delay)) { … }"
        case .foreground: "\(target).foreground(every: \(self.interval)\(delay)) { … }"
        }
    }
}

/// A task a scenario starts with `startTask(label:)`: its isolation, and what its body awaits, in order.
///
/// Its start is task `tn`; each step that dispatches (every awaitable dispatch, and a sleep of a positive duration)
/// takes the next identity, in script order, when the task is started.
struct ModelTrackedScript: Sendable, CustomStringConvertible {
    /// Where the body runs: the global executor, or the main actor (whose start is then a foreground task).
    enum Isolation: Sendable {
        case nonisolated
        case mainActor
    }

    /// One await of the body.
    enum Step: Sendable, CustomStringConvertible {
        /// `try await dispatcher.runInBackground(priority:after:label:) { … }`.
        case background(BackgroundPriority, after: ModelDuration)
        /// `try await dispatcher.runOnMainActor(after:label:) { … }`.
        case mainActor(after: ModelDuration)
        /// `try await dispatcher.clock.sleep(for:)`: a sleep on the dispatcher's virtual clock.
        case sleep(ModelDuration)

        /// Whether the step dispatches a task: an awaitable dispatch always does; a sleep only for a positive
        /// duration (a deadline at or before `now` returns at once, without a timer).
        var dispatches: Bool {
            switch self {
            case .background, .mainActor: true
            case .sleep(let duration): duration.saturatedNanoseconds > 0
            }
        }

        var description: String {
            switch self {
            case .background(let priority, let delay): "runInBackground(priority: .\(priority), after: \(delay))"
            case .mainActor(let delay): "runOnMainActor(after: \(delay))"
            case .sleep(let duration): "clock.sleep(for: \(duration))"
            }
        }
    }

    var isolation: Isolation
    var steps: [Step]

    var description: String {
        let isolation = self.isolation == .mainActor ? "@MainActor in " : ""
        let body = self.steps.map { "try await dispatcher.\($0)" }.joined(separator: "; ")
        return "startTask { \(isolation)\(body) }"
    }
}

/// One thing the test does to the dispatcher. Tasks are named by model identity, `tn` (their label): identities are
/// handed out in the order of the operations that dispatch or start tasks, a task's children and a tracked task's
/// steps taking theirs with it.
enum ModelOperation: Sendable, CustomStringConvertible {
    case dispatch(ModelTaskSpec)
    case cancel(task: Int)
    case runNextForeground
    case runNextBackground
    case runNext
    case runCurrent
    case runUntilIdle
    case advanceBy(ModelDuration)
    case advanceTo(ModelDuration)
    case runUntilTaskLabeled(task: Int)
    /// `run(until:)` with the condition "at least `runs` tasks have run since the dispatcher was made".
    case runUntilRunCount(Int)
    case verifyIdle
    case setMode(ManualDispatcher.Mode)
    case setOrder(ManualDispatcher.Order)
    /// `dispatcher.startTask(label:)` with this body.
    case startTask(ModelTrackedScript)
    /// `try await dispatcher.settle()`.
    case settle
    /// `try await dispatcher.runUntilIdle()`.
    case runUntilIdleAsync
    /// `try await dispatcher.advance(by:)`.
    case advanceByAsync(ModelDuration)
    /// `try await dispatcher.advance(to:)`.
    case advanceToAsync(ModelDuration)
    /// The async `runNextForeground()`, `runNextBackground()` or `runNext()` (`nil`); with `waits` false, with
    /// `waitingUpTo: .zero`, which checks once instead of waiting for a dispatch.
    case runNextAsync(TaskContext?, waits: Bool)
    /// `try await dispatcher.value(of:)` of the tracked task whose start is `task`.
    case valueOf(task: Int)
    /// Starts a repeating series, `tn`; `cancel(task: n)` cancels it through its handle.
    case startSeries(ModelSeriesSpec)
    /// `scopes[n].cancelAll()`.
    case cancelAll(scope: Int)

    /// `runNextForeground`, `runNextBackground` or `runNext`.
    static func stepName(_ context: TaskContext?) -> String {
        switch context {
        case .foreground?: "runNextForeground"
        case .background?: "runNextBackground"
        case nil: "runNext"
        }
    }

    /// Whether the operation starts a series.
    var startsSeries: Bool {
        if case .startSeries = self { return true }
        return false
    }

    /// Whether the operation is one of the async steps and drains, or `value(of:)`.
    var isAsync: Bool {
        switch self {
        case .settle, .runUntilIdleAsync, .advanceByAsync, .advanceToAsync, .runNextAsync, .valueOf: true
        default: false
        }
    }

    var description: String {
        switch self {
        case .dispatch(let spec): "\(spec.target).\(spec)"
        case .cancel(let task): "handle(t\(task)).cancel()"
        case .runNextForeground: "try dispatcher.runNextForeground()"
        case .runNextBackground: "try dispatcher.runNextBackground()"
        case .runNext: "try dispatcher.runNext()"
        case .runCurrent: "try dispatcher.runCurrent()"
        case .runUntilIdle: "try dispatcher.runUntilIdle()"
        case .advanceBy(let duration): "try dispatcher.advance(by: \(duration))"
        case .advanceTo(let duration): "try dispatcher.advance(to: \(duration))"
        case .runUntilTaskLabeled(let task): "try dispatcher.run(untilTaskLabeled: \"t\(task)\")"
        case .runUntilRunCount(let runs): "try dispatcher.run(until: { runs >= \(runs) })"
        case .verifyIdle: "try dispatcher.verifyIdle()"
        case .setMode(let mode): "dispatcher.mode = .\(mode)"
        case .setOrder(let order): "dispatcher.order = .\(order)"
        case .startTask(let script): "dispatcher.\(script)"
        case .settle: "try await dispatcher.settle()"
        case .runUntilIdleAsync: "try await dispatcher.runUntilIdle()"
        case .advanceByAsync(let duration): "try await dispatcher.advance(by: \(duration))"
        case .advanceToAsync(let duration): "try await dispatcher.advance(to: \(duration))"
        case .runNextAsync(let context, let waits):
            "try await dispatcher.\(Self.stepName(context))(\(waits ? "" : "waitingUpTo: .zero"))"
        case .valueOf(let task): "try await dispatcher.value(of: task(t\(task)))"
        case .startSeries(let spec): "\(spec)"
        case .cancelAll(let scope): "scopes[\(scope)].cancelAll()"
        }
    }
}

/// What one operation did, as both sides report it: compared after every operation.
struct ModelObservation: Equatable, CustomStringConvertible {
    /// What the call returned.
    enum Result: Equatable, CustomStringConvertible {
        case nothing
        /// A step or `run(untilTaskLabeled:)` ran this task.
        case ran(Int)
        /// A drain ran this many tasks.
        case count(Int)
        /// A drain returned a count that depends on which thread ran what (auto-drain on a tracked task's thread):
        /// the comparison's stand-in for any `.count`.
        case someCount
        /// `value(of:)` returned this.
        case value(Int)
        /// An error that is not a `ManualDispatcherError`.
        case threw(String)
        /// `cancel()` returned this.
        case cancelled(Bool)
        case failed(ManualDispatcherError.Kind)

        var description: String {
            switch self {
            case .nothing: "returned"
            case .ran(let task): "ran t\(task)"
            case .count(let count): "returned \(count)"
            case .someCount: "returned a count"
            case .value(let value): "value \(value)"
            case .threw(let error): "threw \(error)"
            case .cancelled(let stopped): "cancel() returned \(stopped)"
            case .failed(let kind): "threw \(kind)"
            }
        }
    }

    /// A pending task as `pendingTasks` lists it.
    struct Pending: Equatable, CustomStringConvertible {
        var task: Int
        var sequence: UInt64
        var context: TaskContext
        /// Only for background tasks: a foreground task's priority means nothing.
        var priority: BackgroundPriority?
        var due: Duration
        /// `repeatInterval`: the interval of the series whose next tick this is.
        var interval: Duration? = nil

        var description: String {
            let priority = self.priority.map { " \($0)" } ?? ""
            let interval = self.interval.map { " (a tick every \(nanoseconds($0)) ns)" } ?? ""
            return
                "t\(self.task) #\(self.sequence) \(self.context)\(priority) due \(nanoseconds(self.due)) ns\(interval)"
        }
    }

    var result: Result
    /// The tasks that ran during the operation, in order, whose own closure notes the run: plain tasks and the
    /// awaitable dispatches of tracked tasks (a tracked task's start and its sleeps' timers run library code).
    var ran: [Int]
    var now: Duration
    /// `pendingTasks`, in the order dispatch order would run them.
    var pending: [Pending]
    var pendingCount: Int
    var pendingForegroundCount: Int
    /// `unfinishedTaskCount`: tracked tasks that have not finished.
    var unfinishedTasks: Int
    /// The package hook `unsettledTaskCount`: tracked tasks running on their own executors.
    var unsettledTasks: Int
    /// Each scope's `liveWorkCount`, and whether it `isCancelled`.
    var scopes: [ScopeState] = []

    /// A `DispatchScope` as it reports itself.
    struct ScopeState: Equatable, CustomStringConvertible {
        var liveWork: Int
        var isCancelled: Bool

        var description: String { "\(self.liveWork) live\(self.isCancelled ? ", cancelled" : "")" }
    }

    /// What a comparison checks: everything in a settled stretch; less while a tracked task races the test (see
    /// `ReferenceScheduler+TrackedTasks.swift`).
    struct Checks {
        /// Which pending tasks to compare.
        enum PendingScope {
            case all
            /// All but these: the tasks racing tracked tasks are about to dispatch.
            case excluding(Set<Int>)
            case none
        }

        /// A drain's count (otherwise only that it returned one).
        var count = true
        /// The runs the tasks' closures noted during the operation, in order.
        var runs = true
        var clock = true
        var pending = PendingScope.all
        /// Every tracked task has caught up: compare the counts too, and the runs since the last settled point as a
        /// set.
        var settledPoint = true

        static let everything = Checks()
    }

    /// The observation with each pending task's sequence replaced by its rank among them (1 for the oldest): the
    /// order of the dispatches, without the numbers.
    func rankingSequences() -> ModelObservation {
        var observation = self
        let ranks = Dictionary(
            uniqueKeysWithValues: self.pending.map(\.sequence).sorted().enumerated().map { ($1, UInt64($0 + 1)) })
        for index in observation.pending.indices {
            observation.pending[index].sequence = ranks[observation.pending[index].sequence] ?? 0
        }
        return observation
    }

    /// The observation with what `checks` leaves out blanked, so that two observations compare on the rest.
    func keeping(_ checks: Checks) -> ModelObservation {
        var observation = self
        if !checks.count, case .count = observation.result { observation.result = .someCount }
        if !checks.runs { observation.ran = [] }
        if !checks.clock { observation.now = .zero }
        switch checks.pending {
        case .all: break
        case .excluding(let tasks): observation.pending.removeAll { tasks.contains($0.task) }
        case .none: observation.pending = []
        }
        if !checks.settledPoint {
            observation.pendingCount = 0
            observation.pendingForegroundCount = 0
            observation.unfinishedTasks = 0
            observation.unsettledTasks = 0
            observation.scopes = []
        }
        return observation
    }

    var description: String {
        """
        \(self.result); ran \(self.ran.map { "t\($0)" }); now \(nanoseconds(self.now)) ns; \(self.pendingCount) pending \
        (\(self.pendingForegroundCount) foreground): \(self.pending); \(self.unfinishedTasks) unfinished and \
        \(self.unsettledTasks) unsettled tracked tasks\(self.scopes.isEmpty ? "" : "; scopes \(self.scopes)")
        """
    }
}

/// `duration` in whole nanoseconds, as the reference counts time (durations here never go past `Int64`).
func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
    return overflow || overflow2 ? (seconds < 0 ? .min : .max) : sum
}
