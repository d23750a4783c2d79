/// The error an awaitable dispatch throws when its dispatcher released the work without running it: the work can
/// never run, so the await can never get its result.
///
/// ``TaskDispatcher/runInBackground(priority:after:label:fileID:line:_:)`` and
/// ``TaskDispatcher/runOnMainActor(after:label:fileID:line:_:)`` suspend until the task they dispatch has run. A
/// dispatcher that keeps the ``TaskDispatcher`` contract runs every task it accepts, or cancels it when its handle
/// asks, and the awaitable dispatch cancels that handle only when the awaiting task is cancelled (it then throws
/// `CancellationError`). Any other way the work can go without running ends the await with this error instead of
/// leaving the awaiting task suspended for ever:
///
/// - a decorator that cancels the task through the handle it got, or drops the task, or a dispatcher that drops it
///   (`DispatcherContract`, in `TaskDispatchTesting`, finds such a dispatcher in a test);
/// - an `Operation` of ``OperationQueueDispatcher`` that something else cancelled (`operation.cancel()`, or
///   `OperationQueue.main.cancelAllOperations()` on Apple platforms).
///
/// The await ends when the last reference to the work goes: a decorator that keeps a copy of the task, or a
/// canceller that holds its closure, keeps the await suspended until it lets go (cancelling the awaiting task
/// still ends it, with `CancellationError`).
///
/// ```swift
/// do {
///     let feed = try await dispatcher.runInBackground(label: "parse") { try parse(data) }
///     show(feed)
/// } catch let error as DroppedWorkError {
///     log("never ran: \(error)")  // runInBackground "parse" (Feed.swift:12) never ran: …
/// }
/// ```
public struct DroppedWorkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The awaitable method whose work was released: `"runInBackground"` or `"runOnMainActor"`.
    public let method: String
    /// The label the call gave, if any.
    public let label: String?
    /// Where the awaitable method was called.
    public let callSite: CallSite

    /// Creates the error for a call of `method` with `label` at `callSite`.
    ///
    /// - Parameters:
    ///   - method: The awaitable method whose work was released, such as `"runInBackground"`.
    ///   - label: The label the call gave, if any.
    ///   - callSite: Where the method was called.
    public init(method: String, label: String?, callSite: CallSite) {
        self.method = method
        self.label = label
        self.callSite = callSite
    }

    /// What happened, naming the call, and the usual causes.
    public var description: String {
        "\(describeAwaitableCall(method, label, callSite)) never ran: its dispatcher released the work without running it, so the await cannot get a result. A decorator that cancels or drops the task, a dispatcher that drops it (DispatcherContract finds one), or a cancelled Operation (OperationQueue.main.cancelAllOperations()) does this; to stop the work, cancel the awaiting task instead, and the call throws CancellationError."
    }
}
