/// A seam between code and the threads it runs on: "run this in the background", "run this on the main actor".
///
/// Services take a dispatcher instead of calling Dispatch directly. Production code passes ``QueueDispatcher`` or
/// ``OperationQueueDispatcher``; tests pass `ManualDispatcher` from `TaskDispatchTesting`, which holds every task until
/// the test runs it, so the test can assert the state between the background and the foreground step.
///
/// ```swift
/// final class FeedService {
///     let dispatcher: any TaskDispatcher
///     func load(_ data: Data, completion: @escaping @MainActor @Sendable ([Item]) -> Void) {
///         dispatcher.background(label: "parse") {
///             let items = parse(data)
///             dispatcher.foreground(label: "deliver") { completion(items) }
///         }
///     }
/// }
/// ```
///
/// Every conforming type keeps the rules in the article "The dispatcher contract", and says where it differs in a
/// detail they leave open. A custom dispatcher implements ``dispatch(_:)``; a decorator also forwards ``clock``,
/// ``startTask(label:callSite:operation:)`` and ``value(of:)``, as that article shows.
public protocol TaskDispatcher: Sendable {
    /// The clock that measures this dispatcher's delays; `ContinuousClock` unless the dispatcher names its own, as
    /// `ManualDispatcher` does with its virtual clock.
    associatedtype DispatcherClock: Clock<Duration> = ContinuousClock

    /// The clock on which this dispatcher measures delays: sleep on it instead of calling `Task.sleep`, and a test's
    /// `ManualDispatcher` controls the sleep with the same `advance(by:)` that runs its delayed tasks.
    ///
    /// The default is `ContinuousClock()`. A decorator forwards it (see the article "The dispatcher contract").
    var clock: DispatcherClock { get }

    /// Starts a Swift task that runs `operation`, and returns it; the dispatcher may track it.
    ///
    /// Call it through ``startTask(label:fileID:line:_:)``, which fills in the call site. The default creates a
    /// plain `Task`; `ManualDispatcher` holds the start until the test runs it, tracks the task until it finishes,
    /// and reports an error nobody looked at. A decorator forwards it (see the article "The dispatcher contract").
    ///
    /// - Parameters:
    ///   - label: A short name shown in diagnostics.
    ///   - callSite: Where the task was started.
    ///   - operation: The task's body; its isolation says where it runs.
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
    /// Await a shared started task here, so that `ManualDispatcher` counts its error as seen and the caller as
    /// waiting on it. The default awaits `task.value`; a decorator forwards it.
    ///
    /// - Parameter task: The task to await.
    /// - Returns: The task's value.
    /// - Throws: What the task threw; a test dispatcher may also throw its own error for a wait it bounds.
    nonisolated(nonsending) func value<Success: Sendable>(of task: Task<Success, any Error>) async throws -> Success

    /// Accepts `task` to run later in its context, and returns a handle that can cancel it.
    ///
    /// Never runs the task before returning (see the article "The dispatcher contract").
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
    /// Inside `work`, check the isolation with `MainActor.assertIsolated()`, never `Thread.isMainThread`, which reads
    /// `false` under `swift test` on Linux even on the main queue. In production it runs once the main thread drains
    /// the main queue: in a command-line tool, see the article "Production dispatchers".
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
