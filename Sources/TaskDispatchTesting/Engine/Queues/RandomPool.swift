/// The due background tasks under random order: an array to draw from uniformly in O(1).
///
/// Removal moves the last element into the hole. A boundary remembers which tasks were in the pool when
/// ``markCurrent()`` was last called, so `runCurrent()` can draw among those alone while the tasks they dispatch
/// collect behind it: a removal before the boundary first fills the hole from the boundary's edge.
struct RandomPool: Sendable {
    private(set) var tasks: ContiguousArray<ScheduledTask> = []
    private(set) var boundary = 0

    mutating func append(_ task: ScheduledTask) {
        self.tasks.append(task)
    }

    /// Marks every task now in the pool as current.
    mutating func markCurrent() {
        self.boundary = self.tasks.count
    }

    /// Removes and returns the task at `index`, in O(1).
    mutating func remove(at index: Int) -> ScheduledTask {
        let last = self.tasks.count - 1
        if index < self.boundary {
            let edge = self.boundary - 1
            self.tasks.swapAt(index, edge)
            self.tasks.swapAt(edge, last)
            self.boundary = edge
        } else {
            self.tasks.swapAt(index, last)
        }
        return self.tasks.removeLast()
    }

    /// Removes the tasks for which `shouldBeRemoved` is true, keeping the current ones before the boundary.
    mutating func removeAll(where shouldBeRemoved: (ScheduledTask) -> Bool) {
        self.boundary = self.tasks[..<self.boundary].count { !shouldBeRemoved($0) }
        self.tasks.removeAll(where: shouldBeRemoved)  // in order: the current tasks kept stay first
    }
}
