/// The due background tasks under random order, to draw from in O(1). A boundary keeps the tasks there at the last
/// ``markCurrent()`` first, for `runCurrent()` to draw among.
struct RandomPool: Sendable {
    private(set) var tasks: ContiguousArray<ScheduledTask> = []
    private(set) var boundary = 0

    mutating func append(_ task: ScheduledTask) {
        self.tasks.append(task)
    }

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
