import TaskDispatch

extension Schedule {
    /// The next tick of a live repeating series, if a drain to idle would jump to it next (and with `onlySeriesLeft`,
    /// every pending delayed task is a tick or never falls due, checked in O(n) without allocating): such a drain
    /// would never end.
    mutating func seriesTickBlockingIdle(onlySeriesLeft: Bool = false) -> ScheduledTask? {
        guard !self.hasDueTask, self.nextWaitingDueTime() != nil, let first = self.delayed.first?.task,
            first.series != nil,
            !onlySeriesLeft
                || self.delayed.elements.allSatisfy({
                    !$0.task.isPending || $0.task.series != nil || $0.key.due == TaskKey.never
                })
        else { return nil }
        return first
    }
}
