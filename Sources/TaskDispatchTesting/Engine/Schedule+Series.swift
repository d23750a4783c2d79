import TaskDispatch

extension Schedule {
    /// The next tick of a live repeating series, when a drain that runs until nothing is left would move the clock to
    /// it next: nothing is due, and the earliest delayed task is that tick (with `onlySeriesLeft`, every delayed task
    /// is a tick). Such a drain never ends, so it stops there instead of at the runaway limit.
    ///
    /// - Complexity: O(1); O(n) in the delayed tasks with `onlySeriesLeft`.
    mutating func seriesTickBlockingIdle(onlySeriesLeft: Bool = false) -> ScheduledTask? {
        guard !self.hasDueTask, self.nextWaitingDueTime() != nil, let first = self.delayed.first?.task,
            first.series != nil
        else { return nil }
        guard !onlySeriesLeft || self.waitingTasks.allSatisfy({ $0.series != nil }) else { return nil }
        return first
    }
}
