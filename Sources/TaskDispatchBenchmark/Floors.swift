import Foundation

/// What the FIFO floors offer: dispatch a closure, and run everything dispatched.
protocol FloorFIFO {
    func dispatch(_ work: @escaping @Sendable () -> Void)
    @discardableResult func runAll() -> Int
}

/// The honest floor for a manual FIFO: the plainest lock-and-array queue there is.
///
/// An `NSLock` and an `Array` of closures. `dispatch` appends under the lock; `runAll` swaps the whole array out
/// under the lock and runs the batch outside it, again until a swap finds nothing, and the batch releases its
/// closures when it goes, inside the timing. It keeps no per-task state at all, so it is cheaper than any queue
/// that runs one task per lock turn (``BareFIFO``, and `ManualDispatcher`, which must: a task may cancel or step
/// the tasks after it).
final class PlainFIFO: FloorFIFO, @unchecked Sendable {
    // `tasks` is only touched while `lock` is held.
    private let lock = NSLock()
    private var tasks: [@Sendable () -> Void] = []

    func dispatch(_ work: @escaping @Sendable () -> Void) {
        self.lock.lock()
        self.tasks.append(work)
        self.lock.unlock()
    }

    @discardableResult
    func runAll() -> Int {
        var ran = 0
        while true {
            self.lock.lock()
            let batch = self.tasks
            self.tasks = []
            self.lock.unlock()
            guard !batch.isEmpty else { return ran }
            for work in batch { work() }
            ran += batch.count
        }
    }
}

/// A second floor for a manual FIFO: a lock-protected array of closures with a head index, one task per lock turn.
///
/// `dispatch` appends under the lock; `runAll` takes one closure at a time under the lock and runs it outside,
/// as `ManualDispatcher` does, and writes `nil` into its slot so the closure is released as it runs. That write
/// and the lock turn per task make it cost about 1.6 times ``PlainFIFO`` (as measured in Docs/Benchmarks.md).
/// Nothing else: no handles, no labels, no history. The state sits behind a pointer, as the library's sits in a
/// `ManagedBuffer`, so neither pays for dynamic exclusivity checks.
final class BareFIFO: FloorFIFO, @unchecked Sendable {
    private struct State {
        var tasks: [(@Sendable () -> Void)?] = []
        var head = 0
    }

    private let lock = PlatformLock()
    private let state = UnsafeMutablePointer<State>.allocate(capacity: 1)

    init() {
        self.state.initialize(to: State())
    }

    deinit {
        self.state.deinitialize(count: 1)
        self.state.deallocate()
    }

    func dispatch(_ work: @escaping @Sendable () -> Void) {
        self.lock.withLock { self.state.pointee.tasks.append(work) }
    }

    @discardableResult
    func runAll() -> Int {
        var ran = 0
        while true {
            let work = self.lock.withLock { () -> (@Sendable () -> Void)? in
                let state = self.state
                guard state.pointee.head < state.pointee.tasks.count else { return nil }
                let work = state.pointee.tasks[state.pointee.head]
                state.pointee.tasks[state.pointee.head] = nil
                state.pointee.head += 1
                return work
            }
            guard let work else { return ran }
            work()
            ran += 1
        }
    }
}

/// The floor for delayed tasks: a lock-protected binary min-heap of (due time, sequence, closure).
final class BareHeap: @unchecked Sendable {
    private struct Item {
        var due: Int64
        var sequence: UInt64
        var work: @Sendable () -> Void

        @inline(__always)
        func runsBefore(_ other: Item) -> Bool {
            self.due != other.due ? self.due < other.due : self.sequence < other.sequence
        }
    }

    private struct State {
        var items: [Item] = []
        var nextSequence: UInt64 = 0
        var now: Int64 = 0
    }

    private let lock = PlatformLock()
    private let state = UnsafeMutablePointer<State>.allocate(capacity: 1)

    init() {
        self.state.initialize(to: State())
    }

    deinit {
        self.state.deinitialize(count: 1)
        self.state.deallocate()
    }

    private var items: [Item] {
        _read { yield self.state.pointee.items }
        _modify { yield &self.state.pointee.items }
    }

    private var nextSequence: UInt64 {
        get { self.state.pointee.nextSequence }
        set { self.state.pointee.nextSequence = newValue }
    }

    private var now: Int64 {
        get { self.state.pointee.now }
        set { self.state.pointee.now = newValue }
    }

    func dispatch(after delay: Int64, _ work: @escaping @Sendable () -> Void) {
        self.lock.withLock {
            self.nextSequence += 1
            self.items.append(Item(due: self.now + delay, sequence: self.nextSequence, work: work))
            var child = self.items.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard self.items[child].runsBefore(self.items[parent]) else { break }
                self.items.swapAt(child, parent)
                child = parent
            }
        }
    }

    /// Moves the clock by `duration`, running every task due on the way, in (due, sequence) order.
    @discardableResult
    func advance(by duration: Int64) -> Int {
        let target = self.lock.withLock { self.now + duration }
        var ran = 0
        while true {
            let work = self.lock.withLock { () -> (@Sendable () -> Void)? in
                guard let first = self.items.first, first.due <= target else {
                    self.now = target
                    return nil
                }
                self.now = first.due
                return self.removeMin().work
            }
            guard let work else { return ran }
            work()
            ran += 1
        }
    }

    private func removeMin() -> Item {
        let minimum = self.items[0]
        let last = self.items.removeLast()
        guard !self.items.isEmpty else { return minimum }
        self.items[0] = last
        var parent = 0
        let count = self.items.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { break }
            var smallest = left
            if left + 1 < count && self.items[left + 1].runsBefore(self.items[left]) { smallest = left + 1 }
            guard self.items[smallest].runsBefore(self.items[parent]) else { break }
            self.items.swapAt(parent, smallest)
            parent = smallest
        }
        return minimum
    }
}
