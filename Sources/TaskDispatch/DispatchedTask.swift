/// A description of one unit of work handed to a ``TaskDispatcher``: what to run, where, when, and who asked.
///
/// ``TaskDispatcher/background(priority:after:label:fileID:line:_:)`` and
/// ``TaskDispatcher/foreground(after:label:fileID:line:_:)`` build it; a custom dispatcher or a decorator reads it in
/// ``TaskDispatcher/dispatch(_:)`` (see the article "The dispatcher contract"). A decorator may forward a new task
/// built from this one, inside that call. New scheduling options arrive as new properties with defaults, so conformers
/// keep compiling.
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

    /// How long to wait before the task may run: a lower bound. Zero (the default) or a negative value means "now";
    /// 31 years or more in production, or past about 292 years on a virtual clock, means "never" (until cancelled).
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

    /// Whether ``delay`` asks for a wait at all (it is greater than zero): a custom dispatcher's choice between its
    /// immediate and its timed path, since zero and negative delays both mean "now".
    @inlinable
    public var isDelayed: Bool {
        self.delay > .zero
    }
}
