/// A handle to a dispatched task, used to cancel it before it starts.
///
/// Every dispatch returns one. Cancelling is a race the handle resolves for you: a task either runs
/// completely or not at all. ``cancel()`` tells you which side won.
///
/// ```swift
/// let refresh = dispatcher.background(after: .seconds(30), label: "refresh") { model.refresh() }
/// refresh.cancel()                                   // true: the refresh never runs
/// ```
public struct TaskHandle: Sendable {
    // `@usableFromInline` storage keeps its leading underscore (the house rule's one exception).
    // swift-format-ignore: NoLeadingUnderscores
    @usableFromInline
    internal let _canceller: any TaskCancelling

    /// Creates a handle that cancels through `canceller`, the state of one task.
    ///
    /// Custom dispatchers that do not forward to another dispatcher create handles this way.
    ///
    /// - Parameter canceller: The owner of the task's cancellation state (usually a class, or a struct around
    ///   one): each handle gets the canceller of its own task.
    public init(canceller: any TaskCancelling) {
        self._canceller = canceller
    }

    /// Cancels the task if it has not started.
    ///
    /// - Returns: `true` if this call stopped the task from running; `false` if it had already started,
    ///   finished, or been cancelled.
    @discardableResult
    public func cancel() -> Bool {
        self._canceller.cancelTask()
    }

    /// Whether the task was cancelled before it started.
    public var isCancelled: Bool {
        self._canceller.isTaskCancelled
    }

}
/// What stands behind a ``TaskHandle``: the owner of the cancellation state of one task.
///
/// Implement it only in a custom dispatcher that owns its tasks; a decorator returns the handle of the
/// dispatcher it wraps. Both methods may be called from any thread at any time.
public protocol TaskCancelling: Sendable {
    /// Cancels the task if it has not started.
    ///
    /// - Returns: `true` if the task will now never run; `false` if it had started, finished or been cancelled
    ///   already.
    func cancelTask() -> Bool

    /// Whether the task was cancelled before it started: by a call to ``cancelTask()`` that returned `true`, or by
    /// the cancellation of the `DispatchScope` it was dispatched through.
    var isTaskCancelled: Bool { get }
}
