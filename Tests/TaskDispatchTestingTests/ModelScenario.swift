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

        var description: String {
            "ManualDispatcher(mode: .\(self.mode), order: .\(self.order), runawayLimit: \(self.runawayLimit), historyLimit: \(self.historyLimit))"
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
struct ModelTaskSpec: Sendable, CustomStringConvertible {
    var context: TaskContext
    var priority: BackgroundPriority
    var delay: ModelDuration
    /// Dispatched, in order, by the task when it runs (one level: children have none).
    var children: [ModelTaskSpec] = []
    /// A task this one cancels through its handle when it runs, before dispatching its children: cancellation
    /// during a run (itself, a pending task, or one that has run).
    var cancels: Int?

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
}

/// One thing the test does to the dispatcher. Tasks are named by model identity: the n-th task dispatched is
/// `tn` (its label), counting the tasks that running tasks dispatch.
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

    var description: String {
        switch self {
        case .dispatch(let spec): "dispatcher.\(spec)"
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
        /// `cancel()` returned this.
        case cancelled(Bool)
        case failed(ManualDispatcherError.Kind)

        var description: String {
            switch self {
            case .nothing: "returned"
            case .ran(let task): "ran t\(task)"
            case .count(let count): "returned \(count)"
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

        var description: String {
            let priority = self.priority.map { " \($0)" } ?? ""
            return "t\(self.task) #\(self.sequence) \(self.context)\(priority) due \(nanoseconds(self.due)) ns"
        }
    }

    var result: Result
    /// The tasks that ran during the operation, in order.
    var ran: [Int]
    var now: Duration
    /// `pendingTasks`, in the order dispatch order would run them.
    var pending: [Pending]
    var pendingCount: Int
    var pendingForegroundCount: Int

    var description: String {
        """
        \(self.result); ran \(self.ran.map { "t\($0)" }); now \(nanoseconds(self.now)) ns; \(self.pendingCount) pending \
        (\(self.pendingForegroundCount) foreground): \(self.pending)
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
