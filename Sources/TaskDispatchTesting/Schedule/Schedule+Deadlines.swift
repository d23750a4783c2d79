import TaskDispatch

extension Schedule {
    /// Takes `task` in to fall due at the absolute time `due` (in nanoseconds since the dispatcher was created)
    /// rather than after its delay: a clock sleep's timer, whose deadline must not move if the clock moves between
    /// the sleeper reading it and this call.
    ///
    /// A deadline at or before ``now`` makes the task due at once; one past ``TaskKey/latestTime`` never falls due.
    ///
    /// - Complexity: O(log n).
    mutating func accept(_ task: DispatchedTask, dueAt due: Int64) -> ScheduledTask {
        guard due > self.now else { return self.accept(task) }
        let sequence = self.takeSequence()
        let callSite = self.callSites.index(of: task.callSite)
        let key = TaskKey(due: due > TaskKey.latestTime ? TaskKey.never : due, sequence: sequence)
        let scheduled = ScheduledTask(task, key: key, callSite: callSite, state: .waiting)
        self.delayed.insert(scheduled)
        if scheduled.context == .foreground { self.waitingForeground += 1 } else { self.waitingBackground += 1 }
        return scheduled
    }
}
