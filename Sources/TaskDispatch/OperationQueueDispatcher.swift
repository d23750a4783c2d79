import Foundation

/// A dispatcher backed by `OperationQueue`: the main operation queue for the foreground, an operation queue with a
/// bounded number of concurrent tasks (three by default) for the background.
///
/// ```swift
/// let dispatcher = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 2)
/// ```
///
/// It keeps the ``TaskDispatcher`` contract; background tasks run with their priority as quality of service, and
/// cancelling releases the closure at once. The background queue is not exposed, so nothing bypasses
/// ``maxConcurrentBackgroundTasks``. See the article "Production dispatchers".
public final class OperationQueueDispatcher: TaskDispatcher, BackgroundWorkWaiting, ScopeCarrying, ScopeCarrier {
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

    /// The number of background operations in the queue, running or waiting for a free slot: a cancelled one counts
    /// until the queue finishes it unrun. A snapshot.
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
            TaskHandle(canceller: self.enqueue(task, as: AtomicTaskOperation.self, joining: nil))
        } else {
            TaskHandle(canceller: self.enqueue(task, as: LockedTaskOperation.self, joining: nil))
        }
    }

    package var scopeCarrier: any ScopeCarrier {
        self
    }

    package func dispatch(_ task: DispatchedTask, joining scope: ScopeRegistry) -> TaskHandle {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            TaskHandle(canceller: self.enqueue(task, as: AtomicTaskOperation.self, joining: scope))
        } else {
            TaskHandle(canceller: self.enqueue(task, as: LockedTaskOperation.self, joining: scope))
        }
    }

    @inline(__always)
    private func enqueue<TaskOperation: Operation & ProductionTaskLifecycle>(
        _ task: DispatchedTask,
        as _: TaskOperation.Type,
        joining scope: ScopeRegistry?
    ) -> TaskOperation {
        let background = task.countsAsBackgroundWork
        let operation = TaskOperation(task.work, tracker: background ? self.tracker : nil)
        guard operation.join(scope, countingBackground: background, neverRuns: task.neverRuns) else { return operation }
        // A task delayed for ever gets no timer, which would hold it for ever: its handle (and its scope) hold it.
        guard !task.neverRuns else { return operation }
        switch task.work {
        case .foreground:
            if task.isDelayed {
                self.delayedForeground.schedule(at: task.delay.dispatchDeadline) {
                    guard !operation.isTaskCancelled else { return }
                    OperationQueue.main.addOperation(operation)
                }
            } else {
                OperationQueue.main.addOperation(operation)
            }
        case .background:
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
        return operation
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
    ///
    /// - Parameter timeout: How long to wait at most; `nil` waits without a limit (see ``BackgroundWorkWaiting``).
    /// - Returns: `true` if the background work finished, `false` if the timeout passed first or the calling task
    ///   was cancelled.
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

/// An operation that runs one dispatched task unless it was cancelled first: work, state and operation in one
/// object, the handle's canceller; `@unchecked Sendable` as ``AtomicProductionTask`` is. ``LockedTaskOperation`` is
/// the same without `Atomic`.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
final class AtomicTaskOperation: Operation, ProductionTaskLifecycle, @unchecked Sendable {
    private let state = AtomicTaskStateCell()
    var work: DispatchedTask.Work?
    unowned(unsafe) let tracker: BackgroundWorkTracker?
    @exclusivity(unchecked) var membership: ScopeMembership?

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

    /// Also cancels the task when something else cancels the operation (`cancelAllOperations()`): the queue will
    /// not call ``main()``, so the task releases its closure and stops counting now.
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
    @exclusivity(unchecked) var membership: ScopeMembership?

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

    /// As ``AtomicTaskOperation/cancel()``.
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
