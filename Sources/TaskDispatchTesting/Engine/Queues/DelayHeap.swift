/// A binary min-heap of delayed tasks by ``TaskKey``: each key beside its task, so sifting follows no pointer, and
/// moves without retain or release.
struct DelayHeap: Sendable {
    struct Element: Sendable {
        var key: TaskKey
        var task: ScheduledTask
    }

    private(set) var elements: ContiguousArray<Element> = []

    var count: Int { self.elements.count }

    @inline(__always)
    var first: Element? { self.elements.first }

    /// - Complexity: O(log n).
    mutating func insert(_ task: ScheduledTask) {
        self.elements.append(Element(key: task.key, task: task))
        self.elements.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var hole = buffer.count - 1
            let element = (base + hole).move()
            while hole > 0 {
                let parent = (hole - 1) / 2
                guard element.key < base[parent].key else { break }
                (base + hole).moveInitialize(from: base + parent, count: 1)
                hole = parent
            }
            (base + hole).initialize(to: element)
        }
    }

    /// Removes and returns the earliest task, in O(log n).
    mutating func removeFirst() -> ScheduledTask {
        precondition(!self.elements.isEmpty, "removeFirst() on an empty delay heap")
        let last = self.elements.removeLast()
        guard !self.elements.isEmpty else { return last.task }
        return self.elements.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress.unsafelyUnwrapped
            let count = buffer.count
            let first = base.move()
            var hole = 0
            while true {
                var child = 2 * hole + 1
                guard child < count else { break }
                if child + 1 < count && base[child + 1].key < base[child].key { child += 1 }
                guard base[child].key < last.key else { break }
                (base + hole).moveInitialize(from: base + child, count: 1)
                hole = child
            }
            (base + hole).initialize(to: last)
            return first.task
        }
    }

    /// Removes the tasks for which `shouldBeRemoved` is true and restores the heap order, in O(n log n).
    mutating func removeAll(where shouldBeRemoved: (ScheduledTask) -> Bool) {
        self.elements.removeAll { shouldBeRemoved($0.task) }
        self.elements.sort { $0.key < $1.key }  // a sorted array is a valid heap
    }
}
