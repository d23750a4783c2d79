import Synchronization

/// A dispatcher that takes a scope's plain callback tasks as they are, each with a ``ScopeMembership``, instead of
/// the scope wrapping them: no allocation and no closure of the scope's own. It admits each task's object to the
/// scope (``ScopeRegistry/admit(_:countingBackground:retaining:installing:)``, or without the lock
/// ``ScopeRegistry/link(_:countingBackground:)``) before it publishes the task, and reports the task's end exactly
/// once, outside its own lock, letting the membership go then: after the closure returned, or when a cancel won. A
/// task that ``ScopeCarrier/cancel(_:)`` missed (a run claimed it first) checks ``ScopeMembership/scopeIsCancelled``
/// as it starts, unless the dispatcher's runs and that cancel exclude each other.
package protocol ScopeCarrying: TaskDispatcher {
    /// The object that takes the scope's tasks, kept by the scope: a reference, so that a dispatch through the scope
    /// retains nothing that a weak reference may have made slow to retain (such as the `ManualDispatcher` itself).
    var scopeCarrier: any ScopeCarrier { get }
}

/// See ``ScopeCarrying/scopeCarrier``.
package protocol ScopeCarrier: AnyObject, Sendable {
    /// Dispatches `task`, a plain callback task (no awaitable dispatch's, no series tick), as a member of `scope`;
    /// a task the scope refuses (it was cancelled) is cancelled at once.
    func dispatch(_ task: DispatchedTask, joining scope: ScopeRegistry) -> TaskHandle

    /// Cancels the tasks that `tasks`, objects admitted by ``dispatch(_:joining:)``, stand for, if they have not
    /// started: for the scope's `cancelAll()`.
    func cancel(_ tasks: [AnyObject])
}

extension ScopeCarrier {
    /// A production dispatcher's: each object is its task object, its own canceller.
    package func cancel(_ tasks: [AnyObject]) {
        for task in tasks { _ = (task as? any TaskCancelling)?.cancelTask() }
    }
}

/// A task forwarded through a ``DispatchScope`` to a ``ScopeCarrying`` dispatcher: the scope's registry and the task's
/// slot in it. Not retained: the scope holds the registry, and once the scope is released the registry keeps itself
/// alive while a slot is occupied; the slot is until ``ended()``.
package struct ScopeMembership: @unchecked Sendable {
    private let registry: Unmanaged<ScopeRegistry>
    /// The task's slot, or ``linked`` for a task admitted without the lock, whose slot is in the task.
    let slot: UInt32

    /// The ``slot`` of a task admitted by ``ScopeRegistry/link(_:countingBackground:)``.
    static let linked = UInt32.max

    init(registry: ScopeRegistry, slot: UInt32) {
        self.registry = Unmanaged.passUnretained(registry)
        self.slot = slot
    }

    /// The task ran to its end or was cancelled: the scope forgets it.
    package func ended() {
        self.registry._withUnsafeGuaranteedRef { $0.ended(slot: self.slot) }
    }

    /// ``ended()`` for `task`, admitted by ``ScopeRegistry/link(_:countingBackground:)``.
    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
    func ended(linked task: AtomicProductionTask) {
        self.registry._withUnsafeGuaranteedRef { $0.ended(linked: task) }
    }

    /// Whether the scope was cancelled: a task handed over before that (and not cancelled beneath) must not start.
    package var scopeIsCancelled: Bool {
        self.registry._withUnsafeGuaranteedRef { $0.isCancelled }
    }
}

/// The live work of one ``DispatchScope``: the tasks forwarded with a ``ScopeMembership``, in a table of slots (a
/// `QueueDispatcher` task first on a list of linked tasks, see ``link(_:countingBackground:)``); the rest in a list of
/// entries linked through the entries themselves (either leaves when its work ends, so memory follows the live work);
/// whether the scope was cancelled, and the count of its background work.
///
/// `@unchecked Sendable`: the table, the list and each entry's mutable fields are read and written only under
/// `state`'s lock; the linked tasks' list and the cancellation flag are atomics.
package final class ScopeRegistry: @unchecked Sendable {
    /// A task forwarded with a membership, from its admission until it ended.
    struct Slot {
        /// The dispatcher's object for the task; `nil` while the slot is free. Unretained while the dispatcher holds
        /// the task until its end (which frees the slot from one of the task's own methods); retained otherwise.
        var task: Unmanaged<AnyObject>?
        var countsAsBackground: Bool
        /// Whether the slot holds a reference to `task`: for a task that no queue holds (delayed past any clock).
        var retainsTask: Bool
        /// The next free slot while this one is free (`UInt32.max`: none).
        var nextFree = UInt32.max
    }

    struct State: @unchecked Sendable {
        /// The entry inserted last; each holds the one before it (`next`), strongly.
        var head: DispatchEntry?
        var isCancelled = false
        var liveCount = 0
        var slots: [Slot] = []
        var firstFreeSlot = UInt32.max
        /// The slots not free: the table empties when none is (see ``freeSlot(_:)``).
        var occupiedSlots = 0
        /// The scope let go of the registry, which its occupied slots keep alive (see ``ScopeRegistry/scopeReleased()``).
        var isOrphaned = false
        /// The slots' background tasks, which count as one in the tracker while there are any (two atomic operations
        /// a burst, not a task).
        var backgroundSlots = 0
        /// The registries of scopes over this one's scope, which this scope's cancellation cancels too.
        var children: [Child] = []
        /// The count of `children` at which the released ones are dropped.
        var childrenToPrune = 16

        /// Links `entry` in at the head: O(1), no allocation.
        mutating func insert(_ entry: DispatchEntry) {
            let first = self.head.take()
            first?.previous = Unmanaged.passUnretained(entry)
            entry.next = first
            self.head = entry
            self.liveCount += 1
        }

        /// Takes a free slot for `task`: O(1) amortized.
        mutating func occupySlot(with slot: Slot) -> UInt32 {
            self.liveCount += 1
            self.occupiedSlots += 1
            let index = self.firstFreeSlot
            guard index != .max else {
                self.slots.append(slot)
                return UInt32(self.slots.count - 1)
            }
            self.firstFreeSlot = self.slots[Int(index)].nextFree
            self.slots[Int(index)] = slot
            return index
        }

        /// Frees `slot`. When the last occupied slot of more than 64, or of a table with room for more than 128, is
        /// freed, the table empties and keeps room for as many slots as the burst just ended used (free slots are
        /// taken before new ones, so that is its count), not an earlier larger burst's: a scope that dispatches
        /// bursts allocates once, and memory follows the last burst.
        mutating func freeSlot(_ slot: UInt32) {
            self.occupiedSlots -= 1
            guard self.occupiedSlots > 0 || (self.slots.count <= 64 && self.slots.capacity <= 128) else {
                self.slots.removeAll(keepingCapacity: self.slots.capacity <= Swift.max(2 * self.slots.count, 128))
                self.firstFreeSlot = .max
                return
            }
            self.slots[Int(slot)].task = nil
            self.slots[Int(slot)].nextFree = self.firstFreeSlot
            self.firstFreeSlot = slot
        }

        /// Unlinks `entry` if it is linked: O(1). The caller holds `entry`, so the list's reference is not its last.
        @inline(__always)
        mutating func remove(_ entry: DispatchEntry) {
            // Linked: after another entry (which an unlinked entry never is), or first.
            guard entry.previous != nil || self.head === entry else { return }
            let next = entry.next.take()
            next?.previous = entry.previous
            if let previous = entry.previous {
                // Borrowed, not retained: the entry before holds this one, which the caller holds.
                previous._withUnsafeGuaranteedRef { $0.next = next }
            } else {
                self.head = next
            }
            entry.previous = nil
            self.liveCount -= 1
        }
    }

    /// A scope over this one's scope, held weakly: its release cancels its own work.
    struct Child: Sendable {
        weak var registry: ScopeRegistry?
    }

    /// A `pthread_mutex_t`, not `Mutex`, whose contended path the thread sanitizer does not see on Linux: a scope's
    /// tasks end on many threads at once.
    let state = LockedValue(State(), spinning: true)
    let tracker = BackgroundWorkTracker()
    /// A ``ScopeAtomics`` where `Atomic` is available (a box: the registry itself has no availability floor).
    private let atomicsBox: AnyObject?
    /// What takes the scope's tasks with a membership, if the dispatcher beneath reports their end.
    let carrier: (any ScopeCarrier)?
    let carriesScope: Bool

    init(carrier: (any ScopeCarrier)?) {
        self.carrier = carrier
        self.carriesScope = carrier != nil
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            self.atomicsBox = ScopeAtomics()
        } else {
            self.atomicsBox = nil
        }
    }

    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
    private var atomics: ScopeAtomics {
        unsafeDowncast(self.atomicsBox.unsafelyUnwrapped, to: ScopeAtomics.self)
    }

    /// Whether the scope was cancelled: an atomic load where `Atomic` is available, else under the lock.
    var isCancelled: Bool {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            return self.atomics.cancelled.load(ordering: .acquiring)
        }
        return self.state.withLock { $0.isCancelled }
    }

    /// The live work the scope remembers (``DispatchScope/liveWorkCount``).
    var liveWorkCount: Int {
        self.withLinkedTasksTaken { $0.liveCount }
    }

    /// The slots that stand for a task.
    var occupiedSlotCount: Int {
        self.withLinkedTasksTaken { $0.occupiedSlots }
    }

    /// Forwards `task`, a plain callback task, through the carrier with a membership: `nil` when the dispatcher
    /// beneath carries no scope.
    @inline(__always)
    func forward(_ task: DispatchedTask) -> TaskHandle? {
        guard self.carriesScope else { return nil }
        // Through the optional in place, not a copy of it: a copy would retain the carrier at every dispatch.
        return self.carrier?.dispatch(task, joining: self)
    }

    /// Adds `child`, the registry of a scope over this one's scope: all the child's work runs through this scope, so
    /// this scope's cancellation cancels the child too. Returns `false`, adding nothing, when this scope is cancelled.
    func adopt(_ child: ScopeRegistry) -> Bool {
        self.state.withLock { state in
            guard !state.isCancelled else { return false }
            if state.children.count >= state.childrenToPrune {
                state.children.removeAll { $0.registry == nil }
                state.childrenToPrune = Swift.max(16, state.children.count * 2)
            }
            state.children.append(Child(registry: child))
            return true
        }
    }

    /// Takes in `task`, the object for a task that the dispatcher beneath has not published yet, and hands `install`
    /// its membership under the lock, before ``cancelAll()`` can reach the task. `retaining`: no queue of the
    /// dispatcher's holds the task (see ``Slot/retainsTask``). Returns `false` when the scope is cancelled (the
    /// dispatcher then cancels the task at once).
    @inline(__always)
    package func admit(
        _ task: Unmanaged<AnyObject>, countingBackground: Bool, retaining: Bool = false,
        installing install: (ScopeMembership) -> Void
    ) -> Bool {
        self.state.withLock { state in
            guard !state.isCancelled else { return false }
            if retaining { _ = task.retain() }
            let slot = state.occupySlot(
                with: Slot(task: task, countsAsBackground: countingBackground, retainsTask: retaining))
            if countingBackground {
                state.backgroundSlots += 1
                if state.backgroundSlots == 1 { self.tracker.taskAccepted() }
            }
            install(ScopeMembership(registry: self, slot: slot))
            return true
        }
    }

    /// Admits `task`, which its dispatcher has not published yet, without the lock: pushes it onto the linked tasks,
    /// which the next holder of the lock takes into slots (``takeLinkedTasks(into:)``), so that the dispatching thread
    /// pays two atomic operations, not a lock section. Returns `false` when the scope is cancelled: the dispatcher then
    /// cancels the task, and if `cancelAll()` came after the push, the task's end takes it out again.
    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
    @inline(__always)
    func link(_ task: AtomicProductionTask, countingBackground: Bool) -> Bool {
        let atomics = self.atomics
        guard !atomics.cancelled.load(ordering: .sequentiallyConsistent) else { return false }
        if countingBackground { self.tracker.taskAccepted() }
        task.membership = ScopeMembership(registry: self, slot: ScopeMembership.linked)
        let address = UInt(bitPattern: Unmanaged.passUnretained(task).toOpaque())
        var head = atomics.linked.load(ordering: .relaxed)
        while true {
            task.scopeLink = head
            let (exchanged, original) = atomics.linked.weakCompareExchange(
                expected: head, desired: address, ordering: .sequentiallyConsistent)
            if exchanged { break }
            head = original
        }
        // Either this load sees a `cancelAll()` that set the flag before the push, or that call's
        // `takeLinkedTasks` sees the task (both sequentially consistent).
        return !atomics.cancelled.load(ordering: .sequentiallyConsistent)
    }

    /// Runs `body` under the lock, after the linked tasks were taken into slots: what reads or frees a slot sees
    /// every admitted task. (`cancelAll()` takes them itself, after it set the flag.)
    @inline(__always)
    private func withLinkedTasksTaken<Result>(_ body: (inout State) -> Result) -> Result {
        self.state.withLock { state in
            self.takeLinkedTasks(into: &state)
            return body(&state)
        }
    }

    /// Takes the linked tasks into slots, each slot's number written into its task; under the lock. A linked task is
    /// unretained: its end takes the lock, and so finds it here or in a slot.
    @inline(__always)
    private func takeLinkedTasks(into state: inout State) {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        var next = self.atomics.linked.exchange(0, ordering: .sequentiallyConsistent)
        while let address = UnsafeRawPointer(bitPattern: next) {
            Unmanaged<AtomicProductionTask>.fromOpaque(address)._withUnsafeGuaranteedRef { task in
                next = task.scopeLink
                let slot = state.occupySlot(
                    with: Slot(task: Unmanaged.passUnretained(task), countsAsBackground: false, retainsTask: false))
                task.scopeLink = UInt(slot)
            }
        }
    }

    /// `task`, admitted by ``link(_:countingBackground:)``, ended.
    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
    func ended(linked task: AtomicProductionTask) {
        let countsAsBackground = task.tracker != nil
        // Borrowed, as in `ended(slot:)`: after the lock, `self` may be gone.
        let tracker = Unmanaged.passUnretained(self.tracker)
        let lastSlot = self.withLinkedTasksTaken { state in
            state.liveCount -= 1
            state.freeSlot(UInt32(truncatingIfNeeded: task.scopeLink))
            return state.occupiedSlots == 0 && state.isOrphaned
        }
        if countsAsBackground { tracker._withUnsafeGuaranteedRef { $0.taskEnded() } }
        if lastSlot { Unmanaged.passUnretained(self).release() }
    }

    /// The task in `slot` ended (see ``ScopeCarrying``).
    @inline(__always)
    func ended(slot: UInt32) {
        // Borrowed, not retained: it keeps itself alive while it counts the slots' work.
        let tracker = Unmanaged.passUnretained(self.tracker)
        let (lastBackground, retained, lastSlot) = self.state.withLock { state in
            state.liveCount -= 1
            let freed = state.slots[Int(slot)]
            if freed.countsAsBackground { state.backgroundSlots -= 1 }
            state.freeSlot(slot)
            return (
                freed.countsAsBackground && state.backgroundSlots == 0, freed.retainsTask ? freed.task : nil,
                state.occupiedSlots == 0 && state.isOrphaned
            )
        }
        // Outside the lock: the tracker's end may resume a waiter, whose executor may take a dispatcher's lock.
        if lastBackground { tracker._withUnsafeGuaranteedRef { $0.taskEnded() } }
        retained?.release()
        // After the lock, `self` only if this was the last slot of a released scope, whose retain is this call's to
        // give back: once its slot is freed, another task's end may release the registry.
        if lastSlot { Unmanaged.passUnretained(self).release() }
    }

    /// The scope let go of the registry (after ``cancelAll()``): its occupied slots keep it alive from now on, until
    /// the last is freed, so that a dispatch through a live scope counts no reference of its own.
    func scopeReleased() {
        self.withLinkedTasksTaken { state in
            state.isOrphaned = true
            if state.occupiedSlots > 0 { _ = Unmanaged.passUnretained(self).retain() }
        }
    }

    /// Marks the scope cancelled and ends every live entry; each entry's own cancellation (`scopeCancelled()`) and
    /// the cancellation of the tasks in slots run outside the lock.
    func cancelAll() {
        let (entries, children, slotted) = self.state.withLock { state -> ([DispatchEntry], [Child], [AnyObject]) in
            state.isCancelled = true
            if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
                self.atomics.cancelled.store(true, ordering: .sequentiallyConsistent)
            }
            self.takeLinkedTasks(into: &state)  // after the flag: see `link`
            let children = state.children
            state.children = []
            // Retained here: an occupied slot's task lives until its end frees the slot under this lock.
            let slotted = state.slots.compactMap { $0.task?.takeUnretainedValue() }
            var live: [DispatchEntry] = []
            live.reserveCapacity(state.liveCount)
            // Unlinked one by one, so that a long list is not released by a deep chain of releases.
            var current = state.head.take()
            while let entry = current {
                current = entry.next.take()
                entry.previous = nil
                entry.endedByScope()
                live.append(entry)
            }
            state.liveCount -= live.count  // the tasks in slots leave as the dispatcher beneath reports them
            live.reverse()  // oldest first: in the order the dispatcher beneath accepted them
            return (live, children, slotted)
        }
        for entry in entries { entry.scopeCancelled() }
        if let carrier = self.carrier, !slotted.isEmpty { carrier.cancel(slotted) }  // it reports each end
        for child in children { child.registry?.cancelAll() }
    }
}

/// One piece of live work in a ``ScopeRegistry``: a task dispatched through the scope (its closure, run through the
/// entry so that it runs only while the scope lives, and the handle of the dispatcher beneath; the entry is the
/// canceller of the handle the scope returns), or a Swift task started through it (cancelled with the scope, forgotten
/// when it ends).
///
/// `@unchecked Sendable`: the links and the mutable fields are read and written under the registry's lock, but for
/// `work` and `inner` before the entry is published and after its phase has left `.live` under the lock, when one
/// call owns the entry (see `inner`).
final class DispatchEntry: TaskCancelling, @unchecked Sendable {
    enum Phase: UInt8 {
        /// Being handed to the dispatcher beneath.
        case dispatching
        /// In the registry, waiting to run.
        case live
        /// Its closure was taken to run.
        case ran
        /// Cancelled before it ran.
        case cancelled
    }

    // Field order: the one-byte fields fill the padding after `work`'s tag, so that an entry takes 120 bytes, a
    // 128-byte block: the largest that glibc's malloc keeps in its fast bins.

    /// The entry inserted before this one, held by it.
    @exclusivity(unchecked) var next: DispatchEntry?
    /// The entry inserted after this one, which holds this one: unretained, since that entry unlinks itself (under
    /// the lock) before it can go.
    @exclusivity(unchecked) var previous: Unmanaged<DispatchEntry>?
    private let registry: ScopeRegistry
    private let awaiter: (any TaskAwaiter)?
    // Guarded by the registry's lock (so exclusivity is not checked again at run time).
    @exclusivity(unchecked) private var work: DispatchedTask.Work?
    private let countsAsBackground: Bool
    @exclusivity(unchecked) private var phase = Phase.dispatching
    // The handle of the dispatcher beneath: written once, by `accepted`, before the entry joins the registry (under
    // the lock, which publishes it); read under the lock while `.live`, then by the call that cancelled the entry.
    // Kept after the run, released with the entry (outside any lock). Until then, and once let go, a handle that
    // cancels nothing: an optional's destroy would take the generic path twice a task.
    @exclusivity(unchecked) private var inner = TaskHandle(canceller: NoTask())

    /// An entry for `task`, started through the scope: live from the start, and cancelled through its handle.
    init<Success: Sendable>(started task: Task<Success, any Error>, registry: ScopeRegistry) {
        self.registry = registry
        self.awaiter = nil
        self.countsAsBackground = false
        self.phase = .live
        self.inner = TaskHandle(canceller: StartedTask(task: task))
    }

    /// Takes what it needs of `task` but its closure (borrowed: a copy of the whole task would cost as much as the
    /// rest of the entry).
    init(_ task: borrowing DispatchedTask, registry: ScopeRegistry) {
        let countsAsBackground = task.countsAsBackgroundWork
        if countsAsBackground { Self.withTracker(of: registry) { $0.taskAccepted() } }
        self.countsAsBackground = countsAsBackground
        // The awaitable call this scope is forwarding, if the task is its: the scope ends that await itself when
        // it cancels the task.
        self.awaiter =
            task.awaitIdentity == 0
            ? nil : TaskTracking.dispatchingCall.flatMap { $0.identity == task.awaitIdentity ? $0.awaiter : nil }
        self.registry = registry
    }

    /// Runs `body` with the tracker of `registry`, borrowed (not retained): the registry keeps it, and the caller
    /// holds the registry.
    @inline(__always)
    private static func withTracker(of registry: ScopeRegistry, _ body: (BackgroundWorkTracker) -> Void) {
        Unmanaged.passUnretained(registry.tracker)._withUnsafeGuaranteedRef(body)
    }

    /// Takes `task`'s closure, and puts in its place one that runs it through this entry: moved, not copied (`task`
    /// is the scope's own copy, the one it forwards). The closure holds the entry through a ``ForwardedEntry``, so that
    /// the dispatcher beneath releasing it unrun retires the entry.
    func takeClosure(of task: inout DispatchedTask) {
        let forwarded = ForwardedEntry(self)
        var work: DispatchedTask.Work =
            switch task.work {
            case .foreground: .foreground { forwarded.entry.runOnMainActor() }
            case .background: .background { forwarded.entry.run() }
            }
        swap(&work, &task.work)
        self.work = work
    }

    /// The dispatcher beneath accepted the task: keeps its handle in the entry and the entry in the registry, or, if
    /// the scope was cancelled meanwhile, cancels it.
    func accepted(_ inner: consuming TaskHandle) {
        // No other call reads `inner` before the lock below publishes it: a run that comes first leaves it alone.
        self.inner = consume inner
        let cancelled = self.registry.state.withLock { state -> Bool in
            guard self.phase == .dispatching else { return false }
            if state.isCancelled {
                self.phase = .cancelled
                return true
            }
            self.phase = .live
            state.insert(self)
            return false
        }
        if cancelled { self.scopeCancelled() }
    }

    /// Takes the closure to run, unless the entry or its scope was cancelled.
    @inline(__always)
    private func takeWork() -> DispatchedTask.Work? {
        let (work, cancelledMeanwhile) = self.registry.state.withLock { state -> (DispatchedTask.Work?, Bool) in
            switch self.phase {
            case .ran, .cancelled:
                return (nil, false)
            case .dispatching where state.isCancelled:
                self.phase = .cancelled
                return (nil, true)
            case .dispatching, .live:
                self.phase = .ran
                state.remove(self)
                return (self.work.take(), false)
            }
        }
        // The task beneath is this run: nothing to cancel there, and `inner` may not be written yet.
        if cancelledMeanwhile { self.end(self.work.take(), failingTheAwait: true) }
        return work
    }

    fileprivate func run() {
        guard case .background(let work)? = self.takeWork() else { return }
        work()
        if self.countsAsBackground { self.endCounting() }
    }

    @MainActor fileprivate func runOnMainActor() {
        guard case .foreground(let work)? = self.takeWork() else { return }
        work()
    }

    /// Called under the registry's lock by ``ScopeRegistry/cancelAll()``, which removed the entry, or before the
    /// entry is shared.
    func endedByScope() {
        self.phase = .cancelled
    }

    /// Called outside the lock once ``ScopeRegistry/cancelAll()`` removed the entry, or the entry was accepted or
    /// dispatched after it: cancels the task beneath (or the started task), stops counting it, and ends an await on it
    /// with `CancellationError`.
    func scopeCancelled() {
        self.takeInner().cancel()
        self.end(self.work.take(), failingTheAwait: true)
    }

    /// The dispatcher beneath released the task's closure without running it (a decorator cancelled the task through
    /// the handle it got, or dropped it): the scope forgets the task, and lets its closure go, which ends an await on
    /// it with `DroppedWorkError` (or `CancellationError`, if the awaiting code cancelled it) and a tick loop on it.
    fileprivate func droppedBeneath() {
        let work = self.registry.state.withLock { state -> DispatchedTask.Work?? in
            switch self.phase {
            case .ran, .cancelled: return nil  // it ran, or the scope or its handle cancelled it
            case .live: state.remove(self)
            case .dispatching: break  // released inside the dispatch: `accepted` finds it cancelled
            }
            self.phase = .cancelled
            return .some(self.work.take())
        }
        guard let work else { return }
        self.end(work, failingTheAwait: false)
    }

    private func endCounting() {
        Self.withTracker(of: self.registry) { $0.taskEnded() }
    }

    /// The handle of the dispatcher beneath, which the entry lets go.
    private func takeInner() -> TaskHandle {
        var inner = TaskHandle(canceller: NoTask())
        swap(&inner, &self.inner)
        return inner
    }

    private func end(_ work: consuming DispatchedTask.Work?, failingTheAwait: Bool) {
        if self.countsAsBackground { self.endCounting() }
        guard let work else { return }
        if failingTheAwait, let awaiter = self.awaiter, awaiter.mayFail {
            awaiter.claimFailure()
            awaiter.fail(with: CancellationError(), releasing: work)
        }
    }

    /// Returns whether this call cancelled the task beneath; an entry whose task another call cancelled there (the
    /// dispatcher's wait limit, the awaiting task) is forgotten all the same.
    func cancelTask() -> Bool {
        guard let inner = self.registry.state.withLock({ _ in self.phase == .live ? self.inner : nil }) else {
            return false
        }
        let cancelledHere = inner.cancel()
        guard cancelledHere || inner.isCancelled else { return false }
        let work = self.registry.state.withLock { state -> DispatchedTask.Work?? in
            guard self.phase == .live else { return nil }
            self.phase = .cancelled
            self.inner = TaskHandle(canceller: NoTask())
            state.remove(self)
            return .some(self.work.take())
        }
        guard let work else { return cancelledHere }
        self.end(work, failingTheAwait: false)
        return cancelledHere
    }

    var isTaskCancelled: Bool {
        self.registry.state.withLock { _ in self.phase == .cancelled }
    }
}

/// What the dispatcher beneath holds of a ``DispatchEntry``'s task: the closure it runs captures this alone (so it
/// allocates no context), and its release without a run retires the entry (``DispatchEntry/droppedBeneath()``).
private final class ForwardedEntry: Sendable {
    let entry: DispatchEntry

    init(_ entry: DispatchEntry) {
        self.entry = entry
    }

    deinit {
        self.entry.droppedBeneath()
    }
}

/// The canceller of a handle that stands for no task (a ``DispatchEntry``'s handle beneath before the dispatcher
/// beneath returns its own and after the entry lets it go, a series' before its first tick): there is nothing to
/// cancel. A handle over it, rather than an optional handle, whose destroy would take the generic path.
struct NoTask: TaskCancelling {
    func cancelTask() -> Bool { false }
    var isTaskCancelled: Bool { false }
}

/// The canceller of the handle of a task a cancelled scope refused: it never runs.
package struct RefusedTask: TaskCancelling {
    package init() {}
    package func cancelTask() -> Bool { false }
    package var isTaskCancelled: Bool { true }
}

/// The canceller of a Swift task started through a scope.
private struct StartedTask<Success: Sendable>: TaskCancelling {
    let task: Task<Success, any Error>

    func cancelTask() -> Bool {
        self.task.cancel()
        return true
    }

    var isTaskCancelled: Bool { self.task.isCancelled }
}

/// The atomics of a ``ScopeRegistry``, in a box of their own: `Atomic` needs macOS 15 / iOS 18, the registry does not.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
final class ScopeAtomics: Sendable {
    /// The tasks admitted by ``ScopeRegistry/link(_:countingBackground:)`` and not yet taken into slots, newest first
    /// through ``AtomicProductionTask/scopeLink``: the first one's address, 0 for none.
    let linked = Atomic<UInt>(0)
    /// Whether the scope was cancelled, for reads without the lock.
    let cancelled = Atomic(false)
}
