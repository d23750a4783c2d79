import TaskDispatch

extension Schedule {
    /// The next tick of a live repeating series, when a drain to idle would move the clock to it next (with
    /// `onlySeriesLeft`, every pending delayed task is a tick: O(n) at worst, no allocation, and it stops at the first
    /// that is not): such a drain stops there, since it would never end.
    mutating func seriesTickBlockingIdle(onlySeriesLeft: Bool = false) -> ScheduledTask? {
        guard !self.hasDueTask, self.nextWaitingDueTime() != nil, let first = self.delayed.first?.task,
            first.series != nil
        else { return nil }
        guard !onlySeriesLeft || self.delayed.elements.allSatisfy({ !$0.task.isPending || $0.task.series != nil })
        else { return nil }
        return first
    }
}
