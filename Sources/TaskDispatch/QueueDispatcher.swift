public import Dispatch

/// A dispatcher backed by Dispatch: the main queue for the foreground, a global or caller-supplied queue
/// for the background.
///
/// Use it in production; use `ManualDispatcher` in tests.
///
/// ```swift
/// let service = FeedService(dispatcher: QueueDispatcher())
/// ```
///
/// - Foreground tasks go to `DispatchQueue.main`; delayed ones through `asyncAfter`.
/// - Background tasks go to the global queue whose quality of service matches the task's
///   ``BackgroundPriority``, or, when you pass one, to your own queue (whose own quality of service then
///   applies; the task's priority is ignored).
/// - A cancelled task's closure is released without running when its turn comes.
/// - ``waitForBackgroundTasks(timeout:)`` waits for the background work accepted so far, for a graceful
///   shutdown of a command-line tool or server.
///
/// It keeps the ``TaskDispatcher`` contract; background tasks on a concurrent queue run concurrently.
public struct QueueDispatcher: TaskDispatcher {
    private let backgroundQueue: DispatchQueue?
    private let tracker = _BackgroundWorkTracker()

    /// Creates a dispatcher that runs background work on the global queues, by priority.
    public init() {
        self.backgroundQueue = nil
    }

    /// Creates a dispatcher that runs background work on `backgroundQueue`.
    ///
    /// - Parameter backgroundQueue: The queue for background tasks. A serial queue runs them one at a
    ///   time, in dispatch order; a concurrent queue runs them concurrently.
    public init(backgroundQueue: DispatchQueue) {
        self.backgroundQueue = backgroundQueue
    }

    /// Hands `task` to the main queue or the background queue.
    ///
    /// - Parameter task: The task to run.
    /// - Returns: A handle that can cancel the task until it starts.
    /// - Complexity: O(1): one allocation for the task's state besides Dispatch's own.
    @discardableResult
    public func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let state = _ProductionTask(task.work)
        switch task.work {
        case .foreground:
            if task.isDelayed {
                DispatchQueue.main.asyncAfter(deadline: task.delay._dispatchDeadline) { state.runForeground() }
            } else {
                DispatchQueue.main.async { state.runForeground() }
            }
        case .background:
            let queue = self.backgroundQueue ?? Self.globalQueues[task.priority.rawValue]
            if task.isDelayed {
                let group = self.tracker.group
                group.enter()
                queue.asyncAfter(deadline: task.delay._dispatchDeadline) {
                    state.runBackground()
                    group.leave()
                }
            } else {
                queue.async(group: self.tracker.group) { state.runBackground() }
            }
        }
        return TaskHandle(id: 0, canceller: state)
    }

    /// Blocks until every background task accepted so far has finished or been cancelled, or `timeout` passes.
    ///
    /// Tasks still waiting for their delay count as unfinished.
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

    private static let globalQueues: [DispatchQueue] = BackgroundPriority.allCases.map {
        DispatchQueue.global(qos: $0.qualityOfService)
    }
}
