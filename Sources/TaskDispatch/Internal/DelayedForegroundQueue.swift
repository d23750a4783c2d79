import Dispatch

/// The delayed foreground tasks of one production dispatcher, run on the main queue in the order of their
/// deadlines, and in dispatch order among equal deadlines.
///
/// Neither Dispatch's timers nor `OperationQueue` promise that order, so each task goes into a heap ordered by
/// (deadline, sequence number), and each dispatch schedules one wake-up on the main queue at its deadline that runs,
/// in heap order, every task whose deadline has passed.
///
/// - Complexity: O(log n) a task, for n delayed foreground tasks pending in this dispatcher.
final class DelayedForegroundQueue: Sendable {
    private struct Entry {
        let deadline: UInt64
        let sequence: UInt64
        let run: @Sendable () -> Void

        func precedes(_ other: Entry) -> Bool {
            (self.deadline, self.sequence) < (other.deadline, other.sequence)
        }
    }

    private struct State {
        var heap: [Entry] = []
        var nextSequence: UInt64 = 0

        mutating func insert(deadline: UInt64, run: @escaping @Sendable () -> Void) {
            self.heap.append(Entry(deadline: deadline, sequence: self.nextSequence, run: run))
            self.nextSequence &+= 1
            var child = self.heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard self.heap[child].precedes(self.heap[parent]) else { break }
                self.heap.swapAt(child, parent)
                child = parent
            }
        }

        /// Removes and returns, in order, every entry whose deadline is at or before `now`.
        mutating func removeDue(now: UInt64) -> [Entry] {
            var due: [Entry] = []
            while let first = self.heap.first, first.deadline <= now {
                due.append(first)
                self.removeFirst()
            }
            return due
        }

        private mutating func removeFirst() {
            let last = self.heap.count - 1
            self.heap.swapAt(0, last)
            self.heap.removeLast()
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var first = parent
                if left < self.heap.count && self.heap[left].precedes(self.heap[first]) { first = left }
                if right < self.heap.count && self.heap[right].precedes(self.heap[first]) { first = right }
                guard first != parent else { return }
                self.heap.swapAt(parent, first)
                parent = first
            }
        }
    }

    private let state = LockedValue(State())

    init() {}

    /// Runs `run` on the main queue once `deadline` has passed, after every task of this queue that is due
    /// earlier or was scheduled earlier with the same deadline.
    func schedule(at deadline: DispatchTime, _ run: @escaping @Sendable () -> Void) {
        let nanoseconds = deadline.uptimeNanoseconds
        self.state.withLock { $0.insert(deadline: nanoseconds, run: run) }
        DispatchQueue.main.asyncAfter(deadline: deadline) { self.runDueTasks(wokenFor: nanoseconds) }
    }

    /// Runs, on the main queue, every task whose deadline has passed, in order.
    ///
    /// The wake-up for `deadline` counts that deadline as passed even if the clock reads a hair earlier, so
    /// the task it was scheduled for always runs by its own wake-up.
    private func runDueTasks(wokenFor deadline: UInt64) {
        let now = Swift.max(DispatchTime.now().uptimeNanoseconds, deadline)
        let due = self.state.withLock { $0.removeDue(now: now) }
        for entry in due { entry.run() }
    }
}
