/// A description of one unit of work handed to a ``TaskDispatcher``: what to run, where, when, and who asked.
///
/// You rarely build one yourself: ``TaskDispatcher/background(priority:after:label:fileID:line:_:)`` and
/// ``TaskDispatcher/foreground(after:label:fileID:line:_:)`` build it for you. A custom dispatcher reads it
/// in ``TaskDispatcher/dispatch(_:)``. A decorator also forwards ``TaskDispatcher/clock`` and
/// ``TaskDispatcher/startTask(label:callSite:operation:)``, so that sleeps and tasks started through it reach the
/// dispatcher it wraps (a test's `ManualDispatcher` among them):
///
/// ```swift
/// struct LoggingDispatcher<Base: TaskDispatcher>: TaskDispatcher {
///     let base: Base
///
///     var clock: Base.DispatcherClock { base.clock }
///
///     func startTask<Success: Sendable>(
///         label: String?,
///         callSite: CallSite,
///         @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
///     ) -> Task<Success, any Error> {
///         base.startTask(label: label, callSite: callSite, operation: operation)
///     }
///
///     func dispatch(_ task: DispatchedTask) -> TaskHandle {
///         print("\(task.context) task \(task.label ?? "-") from \(task.callSite)")
///         return base.dispatch(task)
///     }
/// }
/// ```
///
/// A decorator may forward a new `DispatchedTask` built from this one; a tracked task's wait on the work is
/// carried by the `dispatch(_:)` call, not by the task, so it survives as long as the decorator forwards inside
/// that call.
///
/// New scheduling options are added as new properties with defaults, so conformers keep compiling.
public struct DispatchedTask: Sendable {
    /// The closure to run, tagged with its context.
    public enum Work: Sendable {
        /// Work that runs on the main actor.
        case foreground(@MainActor @Sendable () -> Void)
        /// Work that runs on a background thread.
        case background(@Sendable () -> Void)
    }

    /// The closure to run.
    public var work: Work

    /// A short name for diagnostics, such as `"parse feed"`; `nil` when the caller gave none.
    public var label: String?

    /// How long to wait before the task may run. Zero (the default) or a negative value means "now".
    ///
    /// A delay is a lower bound: the task never runs earlier, and may run later.
    public var delay: Duration

    /// The priority of a background task. Ignored for foreground tasks.
    public var priority: BackgroundPriority

    /// Where the task was dispatched.
    public var callSite: CallSite

    /// The awaitable dispatch (`runInBackground`, `runOnMainActor`) that awaits this task's outcome, if any: a test
    /// dispatcher that does not track the awaiting code itself uses it to end that await with an error when the task
    /// has not run within its real-time limit (see ``TaskAwaiter``). Production dispatchers ignore it.
    ///
    /// A copy of the task keeps it (`var task = task; task.work = …`); a task built anew through the initializer
    /// synchronously inside the awaitable dispatch's `dispatch(_:)` call gets it back if it has the same call site
    /// and context (see `AwaitableCall`); one built later, or on another thread, does not.
    package var awaiter: (any TaskAwaiter)?

    /// The repeating series this task is a tick of, if any
    /// (see ``TaskDispatcher/background(every:priority:after:label:fileID:line:_:)``): a test dispatcher lists the
    /// tick as part of its series, and refuses to drain a live series to idle. Production dispatchers ignore it; a
    /// copy of the task keeps it.
    package var series: SeriesMarker?

    /// Creates a task description.
    ///
    /// - Parameters:
    ///   - work: The closure and its context.
    ///   - label: A short name for diagnostics.
    ///   - delay: The minimum wait before the task may run; zero or negative means now.
    ///   - priority: The priority of a background task.
    ///   - callSite: Where the task was dispatched.
    public init(
        _ work: Work,
        label: String? = nil,
        delay: Duration = .zero,
        priority: BackgroundPriority = .medium,
        callSite: CallSite
    ) {
        self.init(unbound: work, label: label, delay: delay, priority: priority, callSite: callSite)
        // Built anew inside an awaitable dispatch's call (a decorator that rebuilds the task it forwards): the task
        // of that call's site and context carries its await, so that a test dispatcher still bounds it.
        if let call = TaskTracking.dispatchingCall, call.isRebuilt(callSite: callSite, context: self.context) {
            self.awaiter = call.awaiter
        }
    }

    /// Creates a task description that no awaitable dispatch awaits: the package's own dispatches, which know.
    @usableFromInline
    package init(
        unbound work: Work,
        label: String? = nil,
        delay: Duration = .zero,
        priority: BackgroundPriority = .medium,
        callSite: CallSite
    ) {
        self.work = work
        self.label = label
        self.delay = delay
        self.priority = priority
        self.callSite = callSite
    }

    /// The context the task runs in, derived from ``work``.
    @inlinable
    public var context: TaskContext {
        switch self.work {
        case .foreground: .foreground
        case .background: .background
        }
    }

    /// Whether ``delay`` asks for a wait at all (it is greater than zero).
    ///
    /// A custom dispatcher uses it to choose between its immediate and its timed path: zero and negative
    /// delays both mean "now", so test `isDelayed` rather than comparing ``delay`` with zero yourself.
    ///
    /// ```swift
    /// func dispatch(_ task: DispatchedTask) -> TaskHandle {
    ///     task.isDelayed ? timer.schedule(task) : queue.enqueue(task)
    /// }
    /// ```
    @inlinable
    public var isDelayed: Bool {
        self.delay > .zero
    }
}
