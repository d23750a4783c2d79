/// A dispatcher whose background work can be awaited: a graceful shutdown for a command-line tool or a server.
///
/// ``QueueDispatcher`` and ``OperationQueueDispatcher`` conform; write shutdown code against this protocol:
///
/// ```swift
/// func shutDown(_ dispatcher: some BackgroundWorkWaiting) async {
///     let finished = await dispatcher.waitForBackgroundTasks(timeout: .seconds(5))
///     if !finished { print("background work still running after 5 s; exiting anyway") }
/// }
/// ```
///
/// The wait counts tasks dispatched while it waits, so stop dispatching first; a cancelled task stops counting at
/// once, and a task delayed 10^9 seconds or more or started with `startTask` never counts. A protocol of your own
/// with this requirement is a trap: see the article "Production dispatchers".
public protocol BackgroundWorkWaiting: Sendable {
    /// Suspends until no background task is outstanding, `timeout` passes, or the calling task is cancelled, without
    /// blocking a thread.
    ///
    /// - Parameter timeout: How long to wait at most; `nil` waits without a limit, zero or negative checks once, and
    ///   10^9 seconds (some 31 years) or more waits without a limit.
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
