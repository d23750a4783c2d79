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

@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
extension TaskState: AtomicRepresentable {}

/// A task's ``TaskState`` in a `Synchronization.Atomic`, changed by compare-and-exchange: no lock, no
/// allocation of its own (it lives inline in the task object).
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
struct AtomicTaskStateCell: ~Copyable, Sendable {
    private let state = Atomic<TaskState>(.pending)

    init() {}

    // Acquiring-and-releasing: the winner of the exchange then reads (or clears) the task's work, which the
    // dispatching thread wrote before publishing the task.
    /// Moves the state from `expected` to `desired` if it is `expected`; returns whether it did.
    @inline(__always)
    func exchange(_ expected: TaskState, for desired: TaskState) -> Bool {
        self.state.compareExchange(expected: expected, desired: desired, ordering: .acquiringAndReleasing).exchanged
    }

    /// The current state.
    @inline(__always)
    func load() -> TaskState {
        self.state.load(ordering: .acquiring)
    }
}

/// ``AtomicTaskStateCell`` behind the package's lock, before macOS 15 / iOS 18 (a second allocation per task).
struct LockedTaskStateCell: Sendable {
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
