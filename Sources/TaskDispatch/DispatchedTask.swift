/// A description of one unit of work handed to a ``TaskDispatcher``: what to run, where, when, and who asked.
///
/// ``TaskDispatcher/background(priority:after:label:fileID:line:_:)`` and
/// ``TaskDispatcher/foreground(after:label:fileID:line:_:)`` build it; a custom dispatcher or a decorator reads it in
/// ``TaskDispatcher/dispatch(_:)`` (see the article "The dispatcher contract"). New options arrive as properties
/// with defaults, so conformers keep compiling.
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

    /// Which awaitable dispatch (`runInBackground`, `runOnMainActor`) awaits this task, in two words of the padding
    /// after ``priority`` (see ``awaitIdentity``), so that copying a task costs nothing more for it.
    package var awaitIdentityHigh: UInt16 = 0
    package var awaitIdentityLow: UInt32 = 0

    /// Where the task was dispatched.
    public var callSite: CallSite

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
        // Built synchronously inside an awaitable dispatch's call, on the calling task (a decorator that rebuilds
        // the task it forwards): a test dispatcher matches it to the call, so that it still bounds the await. A task
        // built from another task that inherits the call (a decorator's pump) may be another call's.
        if let call = TaskTracking.dispatchingCall, call.task == TaskTracking.currentTask {
            self.awaitIdentity = call.identity
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

    /// The identity of the awaitable dispatch that awaits this task (``AwaitableCall/identity``), `0` if none: set by
    /// that dispatch, copied with the task, and set by the initializer inside the call. A test dispatcher matches it
    /// to the call in ``TaskTracking/dispatchingCall``; production dispatchers ignore it.
    package var awaitIdentity: UInt64 {
        get { UInt64(self.awaitIdentityHigh) << 32 | UInt64(self.awaitIdentityLow) }
        set {
            self.awaitIdentityHigh = UInt16(truncatingIfNeeded: newValue >> 32)
            self.awaitIdentityLow = UInt32(truncatingIfNeeded: newValue)
        }
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
