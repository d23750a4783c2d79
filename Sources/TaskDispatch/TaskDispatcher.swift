/// A seam between code and the threads it runs on: "run this in the background", "run this on the main actor".
///
/// Services take a dispatcher instead of calling Dispatch directly. Production code passes
/// ``QueueDispatcher`` or ``OperationQueueDispatcher``; tests pass
/// `ManualDispatcher` from `TaskDispatchTesting`, which holds every task until the test runs it, so the
/// test can assert the state between the background step and the foreground step.
///
/// ```swift
/// final class FeedService {
///     private let dispatcher: any TaskDispatcher
///     init(dispatcher: any TaskDispatcher) { self.dispatcher = dispatcher }
///
///     func load(_ data: Data, completion: @escaping @MainActor @Sendable ([Item]) -> Void) {
///         dispatcher.background(label: "parse") {
///             let items = parse(data)
///             dispatcher.foreground(label: "deliver") { completion(items) }
///         }
///     }
/// }
/// ```
///
/// ## The contract
///
/// Every conforming type keeps these rules, and the package's shared contract test suite checks them
/// against every dispatcher it ships:
///
/// - **At most once, exactly once unless cancelled.** Each task accepted by ``dispatch(_:)`` runs at
///   most once. It runs exactly once unless its ``TaskHandle`` cancelled it first; a cancelled task never
///   runs, and a cancel that races with the start leaves the task either fully run or not run at all.
/// - **Never inline.** ``dispatch(_:)`` returns before the task starts; it never runs the task on the
///   caller's stack. The one documented exception is `ManualDispatcher`'s auto-drain mode, which exists
///   to run tasks at once.
/// - **Foreground is the main actor, in order.** Foreground tasks run on the main actor, one at a time,
///   in the order they were dispatched (among those with equal delays).
/// - **A delay is a lower bound.** A task never starts before its ``DispatchedTask/delay`` has passed;
///   zero or a negative delay means "as soon as possible". The package's dispatchers take any `Duration`: a
///   delay too long for the clock (31 years or more in production, past about 292 years on the virtual clock)
///   means "never", and the task waits until it is cancelled.
/// - **Background tasks may run concurrently** with each other and with the foreground, in any order
///   the dispatcher chooses.
///
/// Where a conforming type differs in a detail the rules leave open, its documentation says so.
///
/// ## Implementing a dispatcher
///
/// Implement ``dispatch(_:)``; a decorator also forwards ``clock``, ``startTask(label:callSite:operation:)`` and
/// ``value(of:)``. Everything else (``background(priority:after:label:fileID:line:_:)``,
/// ``foreground(after:label:fileID:line:_:)``) is sugar that builds a ``DispatchedTask`` and calls it. The
/// other requirements have defaults: ``clock`` is the real `ContinuousClock`,
/// ``startTask(label:callSite:operation:)`` creates a plain `Task`, and ``value(of:)`` awaits `task.value`.
public protocol TaskDispatcher: Sendable {
    /// The clock that measures this dispatcher's delays; `ContinuousClock` unless the dispatcher says otherwise.
    ///
    /// A test dispatcher with virtual time names its own clock here (`ManualDispatcher.Clock`), so that code
    /// which sleeps on ``clock`` sleeps on the same timeline as the delays it dispatches.
    associatedtype DispatcherClock: Clock<Duration> = ContinuousClock

    /// The clock on which this dispatcher measures delays: sleep on it instead of calling `Task.sleep`.
    ///
    /// Code that takes a dispatcher can wait with it, and a test that gives it a `ManualDispatcher` controls
    /// those waits with the same `advance(by:)` that runs its delayed tasks:
    ///
    /// ```swift
    /// func search(_ text: String) {
    ///     pending?.cancel()
    ///     pending = Task {
    ///         try await dispatcher.clock.sleep(for: .milliseconds(300))   // debounce
    ///         results = try await engine.search(text)
    ///     }
    /// }
    /// ```
    ///
    /// Through `any TaskDispatcher` the clock reads as `any Clock<Duration>`, on which `sleep(for:)` and
    /// `sleep(until:)` work as usual.
    ///
    /// The default, for every dispatcher that does not implement it, is `ContinuousClock()`, the real clock that
    /// keeps counting while the device sleeps. A dispatcher that wraps another (a decorator) should be generic
    /// over the wrapped type and forward its clock, `var clock: Base.DispatcherClock { base.clock }`; a decorator around
    /// `any TaskDispatcher` erases it once, in its initializer, into a stored `let clock: AnyDispatcherClock`
    /// (see ``AnyDispatcherClock``). One that forwards nothing gets the real clock, and a test that sleeps
    /// through it waits in real time. A decorator forwards ``startTask(label:callSite:operation:)`` too.
    var clock: DispatcherClock { get }

    /// Starts a Swift task that runs `operation`, and returns it; the dispatcher may track it.
    ///
    /// Call it through ``startTask(label:fileID:line:_:)``, which fills in the call site. The default creates a
    /// plain `Task`, exactly as `Task { }` would; `ManualDispatcher` holds the task's start until the test runs
    /// it, tracks the task until it finishes, and reports an error that nobody looked at.
    ///
    /// A dispatcher that wraps another (a decorator) forwards it, as it forwards ``clock``; otherwise a task started
    /// through the decorator is a plain `Task`, which a test's `ManualDispatcher` neither holds nor tracks:
    ///
    /// ```swift
    /// func startTask<Success: Sendable>(
    ///     label: String?,
    ///     callSite: CallSite,
    ///     @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    /// ) -> Task<Success, any Error> {
    ///     base.startTask(label: label, callSite: callSite, operation: operation)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - label: A short name shown in diagnostics.
    ///   - callSite: Where the task was started.
    ///   - operation: The task's body. Its isolation (read with `operation.isolation`) says where it runs: a
    ///     `@MainActor` closure on the main actor, a nonisolated one on the global concurrent executor.
    /// - Returns: The task, to await or cancel.
    @discardableResult
    func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error>

    /// Awaits the value of a task started with ``startTask(label:callSite:operation:)``: `task.value`, in a way a
    /// test dispatcher sees.
    ///
    /// Code that awaits a started task it shares (one download awaited by every caller that asks for it) awaits it
    /// here, so that `ManualDispatcher` counts the task's error as seen, rather than report it as thrown by a tracked
    /// task that nothing awaited, and counts the caller as waiting on the task. The default awaits `task.value`.
    /// A decorator forwards it, as it forwards ``startTask(label:callSite:operation:)``:
    /// `try await base.value(of: task)`. A test of that shape: the recipe "A started task shared by its callers" in
    /// `TaskDispatchTesting`.
    ///
    /// - Parameter task: The task to await.
    /// - Returns: The task's value.
    /// - Throws: What the task threw; a test dispatcher may also throw its own error for a wait it bounds.
    nonisolated(nonsending) func value<Success: Sendable>(of task: Task<Success, any Error>) async throws -> Success

    /// Accepts `task` to run later in its context, and returns a handle that can cancel it.
    ///
    /// Never runs the task before returning (see the contract above).
    ///
    /// - Parameter task: What to run, where, when, and where it was dispatched.
    /// - Returns: A handle that can cancel the task until it starts.
    @discardableResult
    func dispatch(_ task: DispatchedTask) -> TaskHandle
}

extension TaskDispatcher {
    /// Runs `work` on a background thread.
    ///
    /// ```swift
    /// dispatcher.background(label: "resize") { thumbnail = image.resized(to: 64) }
    /// ```
    ///
    /// - Parameters:
    ///   - priority: How urgent the work is; mapped to a quality of service in production.
    ///   - delay: The minimum wait before the work may run. Zero or negative means now.
    ///   - label: A short name shown in diagnostics.
    ///   - fileID: The dispatching file; leave the default.
    ///   - line: The dispatching line; leave the default.
    ///   - work: The work to run.
    /// - Returns: A handle that can cancel the work until it starts.
    @inlinable
    @discardableResult
    public func background(
        priority: BackgroundPriority = .medium,
        after delay: Duration = .zero,
        label: String? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ work: @escaping @Sendable () -> Void
    ) -> TaskHandle {
        self.dispatch(
            DispatchedTask(
                unbound: .background(work),
                label: label,
                delay: delay,
                priority: priority,
                callSite: CallSite(fileID: fileID, line: line)
            )
        )
    }

    /// Runs `work` on the main actor.
    ///
    /// ```swift
    /// dispatcher.foreground(label: "show") { view.items = items }
    /// ```
    ///
    /// To check inside `work` that it runs on the main actor, use `MainActor.assertIsolated()` or
    /// `MainActor.assumeIsolated { }`, never `Thread.isMainThread`: under `swift test` on Linux the main queue,
    /// and with it the main actor, is drained by a thread that is not the process's first thread, so
    /// `Thread.isMainThread` reads `false` there in every dispatcher, even though the task runs on the main queue.
    ///
    /// - Parameters:
    ///   - delay: The minimum wait before the work may run. Zero or negative means now.
    ///   - label: A short name shown in diagnostics.
    ///   - fileID: The dispatching file; leave the default.
    ///   - line: The dispatching line; leave the default.
    ///   - work: The work to run on the main actor.
    /// - Returns: A handle that can cancel the work until it starts.
    @inlinable
    @discardableResult
    public func foreground(
        after delay: Duration = .zero,
        label: String? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ work: @escaping @MainActor @Sendable () -> Void
    ) -> TaskHandle {
        self.dispatch(
            DispatchedTask(
                unbound: .foreground(work),
                label: label,
                delay: delay,
                callSite: CallSite(fileID: fileID, line: line)
            )
        )
    }
}
