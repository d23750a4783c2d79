/// The error an awaitable dispatch throws when its dispatcher released the work without running it, so the await
/// can never get its result.
///
/// ``TaskDispatcher/runInBackground(priority:after:label:fileID:line:_:)`` and
/// ``TaskDispatcher/runOnMainActor(after:label:fileID:line:_:)`` throw it, rather than stay suspended for ever, when
/// a decorator or a dispatcher cancels or drops the task. Cancelling the awaiting task throws `CancellationError`.
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
        "\(describeAwaitableCall(method, label, callSite)) never ran: its dispatcher released the work without running it, so the await cannot get a result. A decorator that cancels or drops the task, a dispatcher that drops it (DispatcherContract finds one), a ManualDispatcher released with the task pending, or a cancelled Operation (OperationQueue.main.cancelAllOperations() on Apple platforms) does this; to stop the work, cancel the awaiting task instead, and the call throws CancellationError."
    }
}
