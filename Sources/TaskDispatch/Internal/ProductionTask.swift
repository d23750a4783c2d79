#if canImport(CDispatch)
    import CDispatch
#endif

/// What the task objects of both production dispatchers share: the work, the state that decides between
/// running and cancelling, and the tracker of outstanding background work.
///
/// One compare-and-exchange out of ``TaskState/pending`` decides which of "run" and "cancel" wins; the winner owns
/// ``work`` and clears it (releasing the captures), and settles the task's count in ``tracker``.
protocol ProductionTaskLifecycle: AnyObject, TaskCancelling {
    /// Creates a pending task; a background task counts in `tracker` from now until it ends or is cancelled.
    init(_ work: DispatchedTask.Work, tracker: borrowing BackgroundWorkTracker?)

    /// The closure; `nil` once claimed by the run or by the cancel that won.
    var work: DispatchedTask.Work? { get set }

    /// The tracker of the dispatcher's outstanding background work, not retained (the tracker keeps itself
    /// alive while this task counts, see ``BackgroundWorkTracker``); `nil` for foreground tasks.
    var tracker: BackgroundWorkTracker? { get }

    /// The scope this task was forwarded through, told of the task's end (see ``ScopeCarrying``).
    var membership: ScopeMembership? { get set }

    /// Moves the state from `expected` to `desired` if it is `expected`; returns whether it did.
    func exchangeState(_ expected: TaskState, for desired: TaskState) -> Bool

    /// The current state.
    func loadState() -> TaskState

    /// Admits the task, not published yet, to `scope` if it has one (see ``ScopeCarrying``); a task the scope
    /// refuses (it was cancelled) is cancelled here. Returns whether the task is to be published.
    func join(_ scope: ScopeRegistry?, countingBackground: Bool, neverRuns: Bool) -> Bool

    /// Tells the task's scope that the task ended.
    func leave(_ membership: ScopeMembership)
}

extension ProductionTaskLifecycle {
    @inline(__always)
    func join(_ scope: ScopeRegistry?, countingBackground: Bool, neverRuns: Bool) -> Bool {
        self.joinLocking(scope, countingBackground: countingBackground, neverRuns: neverRuns)
    }

    /// ``join(_:countingBackground:neverRuns:)`` in a lock section of the scope's
    /// (``ScopeRegistry/admit(_:countingBackground:retaining:installing:)``).
    @inline(__always)
    func joinLocking(_ scope: ScopeRegistry?, countingBackground: Bool, neverRuns: Bool) -> Bool {
        guard let scope else { return true }
        // A task that never runs is dropped by the queue (`asyncAfter` at `distantFuture`): its slot holds it.
        let admitted = scope.admit(
            Unmanaged.passUnretained(self), countingBackground: countingBackground, retaining: neverRuns
        ) { self.membership = $0 }
        if !admitted { _ = self.cancelTask() }
        return admitted
    }

    @inline(__always)
    func leave(_ membership: ScopeMembership) {
        membership.ended()
    }

    /// Claims the task for running and hands out its work, or returns `nil` if it was cancelled.
    @inline(__always)
    func claimWork() -> DispatchedTask.Work? {
        guard self.exchangeState(.pending, for: .started) else { return nil }
        // Moved out, not copied: no reference-count traffic, and the task no longer holds the closure.
        return self.work.take()
    }

    /// Runs the task in its context unless it was cancelled, or its scope was after it was handed over. A foreground
    /// task must be run on the main queue.
    @inline(__always)
    func run() {
        guard let work = self.claimWork() else { return }
        let membership = self.membership.take()  // the scope's reference goes with the end: no cycle through it
        if membership?.scopeIsCancelled == true {
            // Its scope's `cancelAll()` missed it (it was being handed over): cancelled, as its handle says.
            _ = self.exchangeState(.started, for: .cancelled)
        } else {
            switch work {
            case .background(let work): work()
            case .foreground(let work): MainActorExecution.runOnMainQueue(work)
            }
        }
        // The scope first: a wait on the dispatcher's count sees the scope settled too. (A foreground task counts
        // in no tracker.)
        if let membership { self.leave(membership) }
        self.tracker?.taskEnded()
    }

    /// Cancels the task if it is still pending: drops its work and stops counting it as outstanding.
    ///
    /// - Returns: `true` if the task will now never run.
    @inline(__always)
    func cancelIfPending() -> Bool {
        guard self.exchangeState(.pending, for: .cancelled) else { return false }
        self.work = nil
        if let membership = self.membership.take() { self.leave(membership) }
        self.tracker?.taskEnded()
        return true
    }

    /// Whether the task was cancelled before it started; the identifier is unused (one object per task).
    var isTaskCancelled: Bool {
        self.loadState() == .cancelled
    }
}

#if canImport(CDispatch)
    /// Submitting a task with `dispatch_async_f` where the C API is visible (Linux: `CDispatch`): the queue holds the
    /// retained task as the function's context, so Dispatch allocates no block. Elsewhere a block captures the task.
    protocol FunctionSubmittable: ProductionTaskLifecycle {
        /// Takes the retained task out of `context` and runs it; the function handed to `dispatch_async_f`.
        static var runRetained: @convention(c) (UnsafeMutableRawPointer?) -> Void { get }
    }

    extension FunctionSubmittable {
        /// Submits the task to `queue`; the queue owns one reference until the task has run.
        @inline(__always)
        func submit(to queue: OpaquePointer) {
            dispatch_async_f(queue, Unmanaged.passRetained(self).toOpaque(), Self.runRetained)
        }
    }
#endif

/// One task accepted by ``QueueDispatcher``: work and state in one object, which is also the handle's canceller and
/// the only capture of the Dispatch block. ``LockedProductionTask`` is the same without `Synchronization.Atomic`
/// (two concrete classes, not one generic one, so a task needs no generic metadata).
///
/// `@unchecked Sendable`: `state` and `tracker` are immutable and thread-safe (`tracker` is read only while this
/// task counts in it); `work` is written by the dispatching thread before the task is published, then only by the
/// winner of the state exchange (see ``ProductionTaskLifecycle``); `membership` is written before the task is published
/// (``ProductionTaskLifecycle/join(_:countingBackground:neverRuns:)``: under its scope's lock, or before the push of
/// ``ScopeRegistry/link(_:countingBackground:)``), then taken by that winner; `scopeLink` is written before that push,
/// then under the scope's lock.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
final class AtomicProductionTask: ProductionTaskLifecycle, @unchecked Sendable {
    // Field order: the one-byte state fills the padding after `work`'s tag, so that the task takes 72 bytes, an
    // 80-byte block in glibc's malloc.
    var work: DispatchedTask.Work?
    private let state = AtomicTaskStateCell()
    unowned(unsafe) let tracker: BackgroundWorkTracker?
    @exclusivity(unchecked) var membership: ScopeMembership?
    /// While on its scope's linked tasks, the address of the one linked before it (0: none); once a holder of the
    /// scope's lock took it into a slot, that slot's number. One field for both: a task needs them one after the other.
    @exclusivity(unchecked) var scopeLink: UInt = 0

    /// Creates a pending task; a background task counts in `tracker` from now until it ends or is cancelled.
    @inline(__always)
    init(_ work: DispatchedTask.Work, tracker: borrowing BackgroundWorkTracker?) {
        self.work = work
        self.tracker = copy tracker
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

    func cancelTask() -> Bool {
        self.cancelIfPending()
    }

    /// Admits the task to `scope` without the scope's lock (``ScopeRegistry/link(_:countingBackground:)``), but a
    /// task that no queue holds, which its slot must keep.
    @inline(__always)
    func join(_ scope: ScopeRegistry?, countingBackground: Bool, neverRuns: Bool) -> Bool {
        guard let scope, !neverRuns else {
            return self.joinLocking(scope, countingBackground: countingBackground, neverRuns: neverRuns)
        }
        let admitted = scope.link(self, countingBackground: countingBackground)
        if !admitted { _ = self.cancelTask() }
        return admitted
    }

    @inline(__always)
    func leave(_ membership: ScopeMembership) {
        if membership.slot == ScopeMembership.linked {
            membership.ended(linked: self)
        } else {
            membership.ended()
        }
    }
}

#if canImport(CDispatch)
    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
    extension AtomicProductionTask: FunctionSubmittable {
        static var runRetained: @convention(c) (UnsafeMutableRawPointer?) -> Void {
            { context in
                guard let context else { return }
                Unmanaged<AtomicProductionTask>.fromOpaque(context).takeRetainedValue().run()
            }
        }
    }

    extension LockedProductionTask: FunctionSubmittable {
        static var runRetained: @convention(c) (UnsafeMutableRawPointer?) -> Void {
            { context in
                guard let context else { return }
                Unmanaged<LockedProductionTask>.fromOpaque(context).takeRetainedValue().run()
            }
        }
    }
#endif

/// ``AtomicProductionTask`` for systems without `Synchronization.Atomic` (before macOS 15 / iOS 18): the
/// state sits behind the package's lock, in a second allocation. Same soundness argument.
final class LockedProductionTask: ProductionTaskLifecycle, @unchecked Sendable {
    private let state = LockedTaskStateCell()
    var work: DispatchedTask.Work?
    unowned(unsafe) let tracker: BackgroundWorkTracker?
    @exclusivity(unchecked) var membership: ScopeMembership?

    /// Creates a pending task; a background task counts in `tracker` from now until it ends or is cancelled.
    init(_ work: DispatchedTask.Work, tracker: borrowing BackgroundWorkTracker?) {
        self.work = work
        self.tracker = copy tracker
        tracker?.taskAccepted()
    }

    func exchangeState(_ expected: TaskState, for desired: TaskState) -> Bool {
        self.state.exchange(expected, for: desired)
    }

    func loadState() -> TaskState {
        self.state.load()
    }

    func cancelTask() -> Bool {
        self.cancelIfPending()
    }
}
