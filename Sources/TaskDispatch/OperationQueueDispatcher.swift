public import Foundation

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
/// - Foreground tasks go to `OperationQueue.main`, which runs them on the main actor, in order.
/// - Background tasks become operations on ``backgroundQueue``, with the task's priority as their quality
///   of service. A delayed task is enqueued when its delay has passed.
/// - Cancelling a task cancels its operation (`Operation.cancel()`), so the queue drops it.
///
/// It keeps the ``TaskDispatcher`` contract.
public final class OperationQueueDispatcher: TaskDispatcher {
    /// The queue that runs background tasks.
    public let backgroundQueue: OperationQueue

    /// The number of background tasks that may run at once.
    public let maxConcurrentBackgroundTasks: Int

    private let tracker = _BackgroundWorkTracker()

    /// Creates a dispatcher whose background queue runs at most three tasks at once.
    public convenience init() {
        self.init(validatedMaximum: 3, name: nil)
    }

    /// Creates a dispatcher whose background queue runs at most `maxConcurrentBackgroundTasks` tasks at once.
    ///
    /// - Parameters:
    ///   - maxConcurrentBackgroundTasks: The width of the background queue, 1 or more.
    ///   - name: The background queue's name, shown in debuggers.
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

    /// Wraps `task` in an operation and adds it to the main or the background operation queue.
    ///
    /// - Parameter task: The task to run.
    /// - Returns: A handle whose ``TaskHandle/cancel()`` also cancels the operation.
    @discardableResult
    public func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let operation: _TaskOperation
        let queue: OperationQueue
        switch task.work {
        case .foreground:
            operation = _TaskOperation(task.work, tracker: nil)
            queue = OperationQueue.main
        case .background:
            operation = _TaskOperation(task.work, tracker: self.tracker)
            operation.qualityOfService = Self.qualityOfService(task.priority)
            queue = self.backgroundQueue
            self.tracker.group.enter()
        }
        if task.isDelayed {
            DispatchQueue.global().asyncAfter(deadline: task.delay._dispatchDeadline) {
                queue.addOperation(operation)
            }
        } else {
            queue.addOperation(operation)
        }
        return TaskHandle(id: 0, canceller: operation)
    }

    /// Blocks until every background task accepted so far has finished or been cancelled, or `timeout` passes.
    ///
    /// - Parameter timeout: How long to wait at most.
    /// - Returns: `true` if the background work finished, `false` if the timeout passed first.
    public func waitForBackgroundTasks(timeout: Duration) -> Bool {
        self.tracker.wait(timeout: timeout)
    }

    /// Suspends until every background task accepted so far has finished or been cancelled.
    public func backgroundTasksFinished() async {
        await self.tracker.wait()
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
            "maxConcurrentBackgroundTasks was \(value), but it must be in 1...\(Int.max): "
                + "pass 1 for a serial background queue, or a larger number to run that many tasks at once"
        }
    }
}

/// An operation that runs one dispatched task unless it was cancelled first.
///
/// `@unchecked Sendable` is sound: `task` is immutable and itself lock-protected; `tracker` is written once
/// before the operation is enqueued (which publishes it to the queue's threads) and only read afterwards.
private final class _TaskOperation: Operation, TaskCancelling, @unchecked Sendable {
    private let task: _ProductionTask
    private let tracker: _BackgroundWorkTracker?

    init(_ work: DispatchedTask.Work, tracker: _BackgroundWorkTracker?) {
        self.task = _ProductionTask(work)
        self.tracker = tracker
    }

    // `start()` runs exactly once per enqueued operation, whether or not it was cancelled (a queue skips
    // `main()` for a cancelled operation), so the background work count is released here.
    override func start() {
        defer { self.tracker?.group.leave() }
        super.start()
    }

    override func main() {
        guard let work = self.task.start() else { return }
        switch work {
        case .foreground(let work): MainActor.assumeIsolated(work)
        case .background(let work): work()
        }
    }

    func cancelTask(id: UInt64) -> Bool {
        guard self.task.cancelTask(id: id) else { return false }
        self.cancel()
        return true
    }

    func isTaskCancelled(id: UInt64) -> Bool {
        self.task.isTaskCancelled(id: id)
    }
}
