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

    /// Whether an awaitable dispatch (`runInBackground`, `runOnMainActor`) may await this task: it built the task, or
    /// the task was built through the initializer during that dispatch's call (a decorator that rebuilds it). A test
    /// dispatcher then looks for the call (``TaskTracking/dispatchingCall``); production dispatchers ignore it. A
    /// flag, in the padding after ``priority``: copying a task costs nothing more for it.
    package var isAwaited = false

    /// Where the task was dispatched.
    public var callSite: CallSite

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
        // Built inside an awaitable dispatch's call (a decorator that rebuilds the task it forwards): a test
        // dispatcher matches it to the call, so that it still bounds the await.
        self.isAwaited = TaskTracking.dispatchingCall != nil
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
