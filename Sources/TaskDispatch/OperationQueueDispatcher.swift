import Foundation

/// A dispatcher backed by `OperationQueue`: the main operation queue for the foreground, an operation queue
/// with a bounded number of concurrent tasks for the background.
///
/// This is the classic shape: a background queue that runs at most three tasks at once, so a burst of work
/// does not flood the machine.
///
/// ```swift
/// let dispatcher = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 2)
/// let service = ImageService(dispatcher: dispatcher)
/// ```
///
/// - Foreground tasks go to `OperationQueue.main`, which runs them on the main actor, in order. Delayed ones
///   wait in the dispatcher's own list, ordered by deadline and then by dispatch order, and are added to
///   `OperationQueue.main` from the main queue when due, so foreground tasks with equal delays run in
///   dispatch order.
/// - Background tasks become operations on the dispatcher's own background queue, which runs at most
///   ``maxConcurrentBackgroundTasks`` of them at once, with the task's priority as their quality of service.
///   A delayed task is added to the queue when its delay has passed.
/// - Cancelling a task cancels its operation (`Operation.cancel()`) and releases its closure at once, and the
///   task stops counting for ``waitForBackgroundTasks(timeout:)-(Duration?)`` at once. `OperationQueue` cannot take an
///   operation out, though: a cancelled operation that waits for a free slot keeps its place (and its count
///   in ``backgroundOperationCount``) until a slot frees; the queue then starts it, and it finishes at once
///   without running anything. A cancelled delayed task is never added to the queue.
/// - It conforms to ``BackgroundWorkWaiting``: `await dispatcher.waitForBackgroundTasks(timeout:)` waits for the
///   background operations, for a graceful shutdown of a command-line tool or server.
///
/// The background queue itself is not exposed: changing its width or adding operations to it would bypass
/// ``maxConcurrentBackgroundTasks`` and the waits above. ``backgroundOperationCount`` reports what it holds.
///
/// It keeps the ``TaskDispatcher`` contract.
public final class OperationQueueDispatcher: TaskDispatcher, BackgroundWorkWaiting {
    /// The number of background tasks that may run at once.
    public let maxConcurrentBackgroundTasks: Int

    private let backgroundQueue: OperationQueue
    private let tracker = BackgroundWorkTracker()
    private let delayedForeground = DelayedForegroundQueue()

    /// Creates a dispatcher whose background queue runs at most three tasks at once.
    public convenience init() {
        self.init(validatedMaximum: 3, name: nil)
    }

    /// Creates a dispatcher whose background queue runs at most `maxConcurrentBackgroundTasks` tasks at once.
    ///
    /// - Parameters:
    ///   - maxConcurrentBackgroundTasks: The width of the background queue, 1 or more.
    ///   - name: The background queue's name, shown in debuggers and by `OperationQueue.current?.name` inside
    ///     a background task; `"TaskDispatch.OperationQueueDispatcher"` by default.
    /// - Throws: ``DispatcherConfigurationError/invalidMaxConcurrentBackgroundTasks(_:)`` when the width is
    ///   0 or negative.
    public convenience init(maxConcurrentBackgroundTasks: Int, name: String? = nil) throws(DispatcherConfigurationError)
    {
        guard maxConcurrentBackgroundTasks >= 1 else {
            throw .invalidMaxConcurrentBackgroundTasks(maxConcurrentBackgroundTasks)
        }
        self.init(validatedMaximum: maxConcurrentBackgroundTasks, name: name)
    }

    private init(validatedMaximum: Int, name: String?) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = validatedMaximum
        queue.name = name ?? "TaskDispatch.OperationQueueDispatcher"
        self.backgroundQueue = queue
        self.maxConcurrentBackgroundTasks = validatedMaximum
    }

    /// The number of background operations in the queue: running, or waiting for a free slot.
    ///
    /// It is `OperationQueue.operationCount` of the background queue. A delayed task joins when its delay has
    /// passed. A cancelled task that waits for a free slot still counts until a slot frees and the queue
    /// finishes its operation (without running it); ``waitForBackgroundTasks(timeout:)-(Duration?)`` stops counting it at
    /// once. A snapshot: other threads may change it as soon as it is read.
    public var backgroundOperationCount: Int {
        self.backgroundQueue.operationCount
    }

    /// Wraps `task` in an operation and adds it to the main or the background operation queue.
    ///
    /// - Parameter task: The task to run.
    /// - Returns: A handle whose ``TaskHandle/cancel()`` also cancels the operation.
    /// - Complexity: O(1) for an immediate task: one operation that holds the work and its state. O(log n) for
    ///   a delayed foreground task, n being the delayed foreground tasks pending in this dispatcher.
    @discardableResult
    public func dispatch(_ task: DispatchedTask) -> TaskHandle {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            self.enqueue(task, as: AtomicTaskOperation.self)
        } else {
            self.enqueue(task, as: LockedTaskOperation.self)
        }
    }

    @inline(__always)
    private func enqueue<TaskOperation: Operation & ProductionTaskLifecycle>(
        _ task: DispatchedTask,
        as _: TaskOperation.Type
    ) -> TaskHandle {
        let operation: TaskOperation
        switch task.work {
        case .foreground:
            operation = TaskOperation(task.work, tracker: nil)
            if task.isDelayed {
                self.delayedForeground.schedule(at: task.delay.dispatchDeadline) {
                    guard !operation.isTaskCancelled else { return }
                    OperationQueue.main.addOperation(operation)
                }
            } else {
                OperationQueue.main.addOperation(operation)
            }
        case .background:
            operation = TaskOperation(task.work, tracker: task.neverRuns ? nil : self.tracker)
            if task.priority != .medium {
                operation.qualityOfService = Self.qualityOfService(task.priority)
            }
            let queue = self.backgroundQueue
            if task.isDelayed {
                DispatchQueue.global().asyncAfter(deadline: task.delay.dispatchDeadline) {
                    guard !operation.isTaskCancelled else { return }
                    queue.addOperation(operation)
                }
            } else {
                queue.addOperation(operation)
            }
        }
        return TaskHandle(canceller: operation)
    }

    /// Blocks the calling thread until no background operation is outstanding, or `timeout` passes; the form for
    /// synchronous code, as ``QueueDispatcher/waitForBackgroundTasks(timeout:)-(Duration)`` is for its queues.
    ///
    /// - Parameter timeout: How long to wait at most; any value is accepted.
    /// - Returns: `true` if the background work finished, `false` if the timeout passed first.
    @discardableResult
    public func waitForBackgroundTasks(timeout: Duration) -> Bool {
        self.tracker.wait(timeout: timeout)
    }

    /// Suspends until no background operation is outstanding, `timeout` passes (`nil`, the default: no limit), or the
    /// calling task is cancelled: the requirement of ``BackgroundWorkWaiting``, which says what counts.
    @discardableResult
    public func waitForBackgroundTasks(timeout: Duration? = nil) async -> Bool {
        await self.tracker.finished(timeout: timeout)
    }

    private static func qualityOfService(_ priority: BackgroundPriority) -> QualityOfService {
        switch priority {
        case .background: .background
        case .utility: .utility
        case .medium: .default
        case .userInitiated: .userInitiated
        case .userInteractive: .userInteractive
        }
    }
}

/// Why a dispatcher's configuration was rejected.
public enum DispatcherConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The maximum number of concurrent background tasks was 0 or negative; it carries the rejected value.
    case invalidMaxConcurrentBackgroundTasks(Int)

    /// What was wrong and how to fix it.
    public var description: String {
        switch self {
        case .invalidMaxConcurrentBackgroundTasks(let value):
            "maxConcurrentBackgroundTasks was \(value), but it must be in 1...\(Int.max): pass 1 for a serial background queue, or a larger number to run that many tasks at once"
        }
    }
}

/// An operation that runs one dispatched task unless it was cancelled first: the work, its state and the
/// operation in one object, which is also the handle's canceller.
///
/// The state is a `Synchronization.Atomic`; ``LockedTaskOperation`` is the same for systems without it (two
/// concrete classes, not one generic class, so creating an operation needs no generic metadata).
///
/// `@unchecked Sendable` is sound: `state` and `tracker` are immutable and themselves thread-safe; `work` is
/// written by the dispatching thread before the operation is added to a queue (which publishes it to the
/// queue's threads), and after that only by the single winner of the state exchange (see
/// ``ProductionTaskLifecycle``). The tracker is the dispatcher's: a background task counts in it from
/// dispatch until its work returns or its cancel succeeds (``ProductionTaskLifecycle/run()``,
/// ``ProductionTaskLifecycle/cancelIfPending()``), not until the queue starts or drops the operation.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
final class AtomicTaskOperation: Operation, ProductionTaskLifecycle, @unchecked Sendable {
    private let state = AtomicTaskStateCell()
    var work: DispatchedTask.Work?
    unowned(unsafe) let tracker: BackgroundWorkTracker?

    init(_ work: DispatchedTask.Work, tracker: borrowing BackgroundWorkTracker?) {
        self.work = work
        self.tracker = copy tracker
        super.init()
        tracker?.taskAccepted()
    }

    @inline(__always)
    func exchangeState(_ expected: TaskState, for desired: TaskState) -> Bool {
        self.state.exchange(expected, for: desired)
    }

    @inline(__always)
    func loadState() -> TaskState {
        self.state.load()
    }

    override func main() {
        self.run()
    }

    /// Also cancels the task when something else cancels the operation (`cancelAllOperations()` on its queue,
    /// say): the queue will not call ``main()``, so the task releases its closure and stops counting as
    /// outstanding now, and an awaitable dispatch waiting on it ends (`DroppedWorkError`).
    override func cancel() {
        _ = self.cancelIfPending()
        super.cancel()
    }

    /// Cancels the task if it is still pending, and then its operation, so the queue finishes it without
    /// running it as soon as it would have started it.
    func cancelTask() -> Bool {
        guard self.cancelIfPending() else { return false }
        super.cancel()
        return true
    }
}

/// ``AtomicTaskOperation`` for systems without `Synchronization.Atomic` (before macOS 15 / iOS 18): the state
/// sits behind the package's lock, in a second allocation. Same soundness argument.
final class LockedTaskOperation: Operation, ProductionTaskLifecycle, @unchecked Sendable {
    private let state = LockedTaskStateCell()
    var work: DispatchedTask.Work?
    unowned(unsafe) let tracker: BackgroundWorkTracker?

    init(_ work: DispatchedTask.Work, tracker: borrowing BackgroundWorkTracker?) {
        self.work = work
        self.tracker = copy tracker
        super.init()
        tracker?.taskAccepted()
    }

    func exchangeState(_ expected: TaskState, for desired: TaskState) -> Bool {
        self.state.exchange(expected, for: desired)
    }

    func loadState() -> TaskState {
        self.state.load()
    }

    override func main() {
        self.run()
    }

    /// Also cancels the task when something else cancels the operation (`cancelAllOperations()` on its queue,
    /// say): the queue will not call ``main()``, so the task releases its closure and stops counting as
    /// outstanding now, and an awaitable dispatch waiting on it ends (`DroppedWorkError`).
    override func cancel() {
        _ = self.cancelIfPending()
        super.cancel()
    }

    /// Cancels the task if it is still pending, and then its operation (see ``AtomicTaskOperation``).
    func cancelTask() -> Bool {
        guard self.cancelIfPending() else { return false }
        super.cancel()
        return true
    }
}
