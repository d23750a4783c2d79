/// A dispatcher whose background work can be awaited: a graceful shutdown for a command-line tool or a server.
///
/// ``QueueDispatcher`` and ``OperationQueueDispatcher`` conform. Write code that shuts down over either against
/// this protocol, rather than a protocol of your own:
///
/// ```swift
/// func shutDown(_ dispatcher: some BackgroundWorkWaiting) async {
///     guard await dispatcher.waitForBackgroundTasks(timeout: .seconds(5)) else {
///         print("background work still running after 5 s; exiting anyway")
///         return
///     }
/// }
/// ```
///
/// The wait lasts until no background task is outstanding, counting the tasks dispatched while it waits, so stop
/// dispatching first: work that keeps coming (a poll loop that dispatches itself again) holds it until the timeout.
/// A cancelled task stops counting the moment it is cancelled, even if its delay has not passed; a task delayed
/// 10^9 seconds (some 31 years) or more, which never runs, does not count. A Swift task started with
/// ``TaskDispatcher/startTask(label:fileID:line:_:)`` is a plain `Task` in production and does not count: await it
/// (`try await task.value`) before the tool exits.
///
/// A protocol of your own that requires `waitForBackgroundTasks(timeout: Duration) async -> Bool` compiles too, but
/// the production dispatchers satisfy it with their blocking form, which holds a thread for the whole timeout and
/// ignores cancellation (the article "Production dispatchers" names this trap). A type that wraps a dispatcher
/// conforms by forwarding ``waitForBackgroundTasks(timeout:)`` to it.
public protocol BackgroundWorkWaiting: Sendable {
    /// Suspends until no background task is outstanding, `timeout` passes, or the calling task is cancelled, without
    /// blocking a thread.
    ///
    /// - Parameter timeout: How long to wait at most; `nil` waits without a limit. Any value is accepted: zero or
    ///   negative checks once, and 10^9 seconds (some 31 years) or more waits without a limit.
    /// - Returns: `true` if the background work finished, `false` if the timeout passed first or the calling task
    ///   was cancelled.
    @discardableResult
    func waitForBackgroundTasks(timeout: Duration?) async -> Bool
}

extension BackgroundWorkWaiting {
    /// Suspends until no background task is outstanding, or the calling task is cancelled.
    ///
    /// - Returns: `true` if the background work finished, `false` if the calling task was cancelled first.
    @discardableResult
    public func waitForBackgroundTasks() async -> Bool {
        await self.waitForBackgroundTasks(timeout: nil)
    }
}
