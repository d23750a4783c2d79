import Synchronization

/// Where a production task is in its life: waiting, claimed by the thread that runs it, or cancelled.
///
/// A task leaves ``pending`` exactly once, by one compare-and-exchange: to ``started`` when a queue runs it,
/// to ``cancelled`` when its handle cancels it. Whichever exchange succeeds owns the task's work from then on.
enum TaskState: UInt8, Sendable {
    case pending
    case started
    case cancelled
}

/// The word that holds a task's ``TaskState`` and changes it with a compare-and-exchange.
///
/// Two implementations: ``AtomicTaskStateCell`` (`Synchronization.Atomic`, on Linux and from macOS 15 /
/// iOS 18) and ``LockedTaskStateCell`` (the package's lock, for the older systems the package still deploys
/// to). Dispatchers choose one with `#available` and are generic over it, so the hot path is specialized.
protocol TaskStateCell: ~Copyable, Sendable {
    /// A cell in ``TaskState/pending``.
    init()

    /// Moves the state from `expected` to `desired` if it is `expected`; returns whether it did.
    func exchange(_ expected: TaskState, for desired: TaskState) -> Bool

    /// The current state.
    func load() -> TaskState
}

@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
extension TaskState: AtomicRepresentable {}

/// A task state in a `Synchronization.Atomic`: no lock, no allocation of its own.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
struct AtomicTaskStateCell: TaskStateCell, ~Copyable {
    private let state = Atomic<TaskState>(.pending)

    init() {}

    // Acquiring-and-releasing: the winner of the exchange then reads (or clears) the task's work, which the
    // dispatching thread wrote before publishing the task.
    @inline(__always)
    func exchange(_ expected: TaskState, for desired: TaskState) -> Bool {
        self.state.compareExchange(expected: expected, desired: desired, ordering: .acquiringAndReleasing).exchanged
    }

    @inline(__always)
    func load() -> TaskState {
        self.state.load(ordering: .acquiring)
    }
}

/// A task state behind the package's lock, for systems without `Synchronization.Atomic` (before macOS 15 /
/// iOS 18). It costs a second allocation per task (the lock and the state share one).
struct LockedTaskStateCell: TaskStateCell {
    private let state = LockedValue(TaskState.pending)

    init() {}

    func exchange(_ expected: TaskState, for desired: TaskState) -> Bool {
        self.state.withLock { state in
            guard state == expected else { return false }
            state = desired
            return true
        }
    }

    func load() -> TaskState {
        self.state.withLock { $0 }
    }
}
