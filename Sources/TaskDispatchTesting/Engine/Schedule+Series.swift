import TaskDispatch

extension Schedule {
    /// The next tick of a live repeating series, when a drain to idle would move the clock to it next (with
    /// `onlySeriesLeft`, in O(n), every delayed task is a tick): such a drain stops there, since it would never end.
    mutating func seriesTickBlockingIdle(onlySeriesLeft: Bool = false) -> ScheduledTask? {
        guard !self.hasDueTask, self.nextWaitingDueTime() != nil, let first = self.delayed.first?.task,
            first.series != nil
        else { return nil }
        guard !onlySeriesLeft || self.waitingTasks.allSatisfy({ $0.series != nil }) else { return nil }
        return first
    }
}
