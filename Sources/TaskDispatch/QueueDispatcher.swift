public import Dispatch

#if canImport(CDispatch)
    import CDispatch
#endif

#if canImport(CDispatch)
    /// A task type ``QueueDispatcher`` can submit with `dispatch_async_f`.
    typealias SubmittableTask = FunctionSubmittable
#else
    /// A task type ``QueueDispatcher`` submits in a block.
    typealias SubmittableTask = ProductionTaskLifecycle
#endif

/// A dispatcher backed by Dispatch: the main queue for the foreground, a global or caller-supplied queue for the
/// background. Use it in production; use `ManualDispatcher` in tests.
///
/// ```swift
/// let service = FeedService(dispatcher: QueueDispatcher())
/// ```
///
/// It keeps the ``TaskDispatcher`` contract. Delayed foreground tasks wait in the dispatcher's own list, in deadline
/// and then dispatch order. Background tasks go to the global queue of their ``BackgroundPriority``, or to your
/// queue, whose own quality of service then applies. Cancelling releases the closure at once. A dispatch allocates
/// one object, the task's work and state (two before macOS 15 / iOS 18). See the article "Production dispatchers".
public struct QueueDispatcher: TaskDispatcher, BackgroundWorkWaiting, ScopeCarrying {
    private let backgroundQueue: DispatchQueue?
    private let tracker = BackgroundWorkTracker()
    private let delayedForeground = DelayedForegroundQueue()

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
    /// - Complexity: O(1) for an immediate task: one allocation for the task's work and state (besides
    ///   Dispatch's own block where it needs one). O(log n) for a delayed foreground task, n being the delayed
    ///   foreground tasks pending in this dispatcher.
    @discardableResult
    public func dispatch(_ task: DispatchedTask) -> TaskHandle {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            TaskHandle(canceller: self.enqueue(task, as: AtomicProductionTask.self, joining: nil))
        } else {
            TaskHandle(canceller: self.enqueue(task, as: LockedProductionTask.self, joining: nil))
        }
    }

    package var scopeCarrier: any ScopeCarrier {
        QueueScopeCarrier(dispatcher: self)
    }

    fileprivate func dispatch(_ task: DispatchedTask, joining scope: ScopeRegistry) -> TaskHandle {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            TaskHandle(canceller: self.enqueue(task, as: AtomicProductionTask.self, joining: scope))
        } else {
            TaskHandle(canceller: self.enqueue(task, as: LockedProductionTask.self, joining: scope))
        }
    }

    @inline(__always)
    private func enqueue<State: SubmittableTask>(
        _ task: DispatchedTask, as _: State.Type, joining scope: ScopeRegistry?
    ) -> State {
        let background = task.countsAsBackgroundWork
        let state = State(task.work, tracker: background ? self.tracker : nil)
        guard state.join(scope, countingBackground: background, neverRuns: task.neverRuns) else { return state }
        // A task delayed for ever gets no timer, which would hold it for ever: its handle (and its scope) hold it.
        guard !task.neverRuns else { return state }
        switch task.work {
        case .foreground:
            if task.isDelayed {
                self.delayedForeground.schedule(at: task.delay.dispatchDeadline) { state.run() }
            } else {
                #if canImport(CDispatch)
                    state.submit(to: dispatch_get_main_queue())
                #else
                    DispatchQueue.main.async { state.run() }
                #endif
            }
        case .background:
            if task.isDelayed {
                let queue = self.backgroundQueue ?? Self.globalQueues[task.priority.rawValue]
                queue.asyncAfter(deadline: task.delay.dispatchDeadline) { state.run() }
            } else if let queue = self.backgroundQueue {
                queue.async { state.run() }
            } else {
                #if canImport(CDispatch)
                    state.submit(to: dispatch_get_global_queue(Self.qualityOfServiceClasses[task.priority.rawValue], 0))
                #else
                    Self.globalQueues[task.priority.rawValue].async { state.run() }
                #endif
            }
        }
        return state
    }

    /// Blocks the calling thread until no background task is outstanding, or `timeout` passes: the form for
    /// synchronous code (async code gets ``waitForBackgroundTasks(timeout:)-(Duration?)``). See
    /// ``BackgroundWorkWaiting`` for what counts. Called from one of the dispatcher's own background tasks, it waits
    /// for itself and returns `false` at the timeout.
    ///
    /// - Parameter timeout: How long to wait at most: zero or negative checks once, 10^9 seconds (some 31 years) or
    ///   more waits without a limit.
    /// - Returns: `true` if the background work finished, `false` if the timeout passed first.
    @discardableResult
    public func waitForBackgroundTasks(timeout: Duration) -> Bool {
        self.tracker.wait(timeout: timeout)
    }

    /// Suspends until no background task on the queues is outstanding, `timeout` passes (`nil`, the default: no
    /// limit), or the calling task is cancelled: the requirement of ``BackgroundWorkWaiting``, which says what counts.
    ///
    /// - Parameter timeout: How long to wait at most; `nil` waits without a limit (see ``BackgroundWorkWaiting``).
    /// - Returns: `true` if the background work finished, `false` if the timeout passed first or the calling task
    ///   was cancelled.
    @discardableResult
    public func waitForBackgroundTasks(timeout: Duration? = nil) async -> Bool {
        await self.tracker.finished(timeout: timeout)
    }

    private static let globalQueues: [DispatchQueue] = BackgroundPriority.allCases.map {
        DispatchQueue.global(qos: $0.qualityOfService)
    }

    #if canImport(CDispatch)
        /// The `qos_class_t` values of `BackgroundPriority.allCases`, for `dispatch_get_global_queue`: the values
        /// `DispatchQueue.global(qos:)` passes (`QOS_CLASS_BACKGROUND` … `QOS_CLASS_USER_INTERACTIVE`).
        private static let qualityOfServiceClasses: [Int] = [0x09, 0x11, 0x15, 0x19, 0x21]
    #endif
}

/// A ``QueueDispatcher``'s ``ScopeCarrier``: a reference to a copy of it.
private final class QueueScopeCarrier: ScopeCarrier {
    let dispatcher: QueueDispatcher

    init(dispatcher: QueueDispatcher) {
        self.dispatcher = dispatcher
    }

    func dispatch(_ task: DispatchedTask, joining scope: ScopeRegistry) -> TaskHandle {
        self.dispatcher.dispatch(task, joining: scope)
    }
}
