import TaskDispatch

extension Schedule {
    /// A task handed out to run: the record of its run, and its closure, taken out of it.
    struct Step {
        var run: RunRecord
        var work: DispatchedTask.Work
    }

    /// Ends the previous task, then starts and records the next one in `scope` dispatched before `sequenceLimit`,
    /// jumping the clock to `clockLimit` at most. O(1) amortized; O(log n) when the clock jumps.
    mutating func next(in scope: Scope, jumpingClockTo clockLimit: Int64?, before sequenceLimit: UInt64 = .max) -> Step?
    {
        self.endExecution()
        var chosen = self.chooseDue(in: scope, before: sequenceLimit)
        if chosen == nil, let clockLimit, !self.hasDueTask, let due = self.nextWaitingDueTime(), due <= clockLimit {
            self.moveClock(to: due)
            chosen = self.chooseDue(in: scope, before: sequenceLimit)
        }
        guard let task = chosen, let work = task.work else { return nil }
        task.work = nil
        task.state = .started
        if task.context == .foreground { self.dueForeground -= 1 } else { self.dueBackground -= 1 }
        self.claim?.executing = task.context
        self.claim?.executingSequence = task.key.sequence
        self.claim?.executingTrackedWork =
            !self.clockHold.trackedWork.isEmpty && self.clockHold.trackedWork.remove(task.key.sequence) != nil
        let run = RunRecord(task: task, start: self.now)
        if self.historyLimit > 0 {
            if self.history.count == self.historyLimit { _ = self.history.removeFirst() }
            self.history.append(run)
        }
        return Step(run: run, work: work)
    }

    /// Whether a drain would run another task, jumping the clock no further than `clockLimit`.
    mutating func hasRunnableTask(jumpingClockTo clockLimit: Int64) -> Bool {
        self.hasDueTask || self.nextWaitingDueTime().map { $0 <= clockLimit } ?? false
    }

    /// Moves the clock to `time` (never backwards or past ``TaskKey/latestTime``), making due the tasks it reaches.
    mutating func moveClock(to time: Int64) {
        self.now = Swift.max(self.now, Swift.min(time, TaskKey.latestTime))
        while let first = self.delayed.first, first.key.due <= self.now {
            let task = self.delayed.removeFirst()
            guard task.isPending else {
                self.staleEntries -= 1
                continue
            }
            task.state = .due
            if task.context == .foreground { self.waitingForeground -= 1 } else { self.waitingBackground -= 1 }
            self.enqueueDue(task)
        }
        self.clockHold.endHold()
    }

    /// Marks the due tasks as the ones `runCurrent()` may run, and returns the sequence limit that goes with it.
    mutating func markCurrent() -> UInt64 {
        self.pool.markCurrent()
        return self.nextSequence
    }

    // MARK: - Choosing among due tasks

    private mutating func chooseDue(in scope: Scope, before sequenceLimit: UInt64) -> ScheduledTask? {
        let foreground =
            scope != .background && self.dueForeground > 0 ? self.foregroundFront(before: sequenceLimit) : nil
        if case .random = self.order {
            return self.chooseAtRandom(foreground: foreground, in: scope, currentOnly: sequenceLimit != .max)
        }
        let background =
            scope != .foreground && self.dueBackground > 0 ? self.backgroundFront(before: sequenceLimit) : nil
        if let queue = background, foreground.map({ self.background[queue][0].key < $0.key }) ?? true {
            return self.background[queue].removeFirst()
        }
        return foreground == nil ? nil : self.foreground.removeFirst()
    }

    /// The oldest due foreground task dispatched before `sequenceLimit`, after dropping cancelled ones.
    @inline(__always)
    private mutating func foregroundFront(before sequenceLimit: UInt64) -> ScheduledTask? {
        while let first = self.foreground.first {
            if first.isPending { return first.key.sequence < sequenceLimit ? first : nil }
            _ = self.foreground.removeFirst()
            self.staleEntries -= 1
        }
        return nil
    }

    /// The index of the background queue whose front runs next, after dropping cancelled tasks: the only queue
    /// in dispatch order, the highest priority with a task dispatched before `sequenceLimit` in priority order.
    @inline(__always)
    private mutating func backgroundFront(before sequenceLimit: UInt64) -> Int? {
        var index = self.background.count - 1
        while index >= 0 {
            while let first = self.background[index].first {
                if first.isPending {
                    if first.key.sequence < sequenceLimit { return index }
                    break
                }
                _ = self.background[index].removeFirst()
                self.staleEntries -= 1
            }
            index -= 1
        }
        return nil
    }

    /// A uniform draw among the oldest due foreground task (the main queue is serial) and the due background tasks.
    private mutating func chooseAtRandom(foreground: ScheduledTask?, in scope: Scope, currentOnly: Bool)
        -> ScheduledTask?
    {
        let foregroundChoices = foreground == nil ? 0 : 1
        while true {
            let backgroundChoices = scope == .foreground ? 0 : currentOnly ? self.pool.boundary : self.pool.tasks.count
            let choices = foregroundChoices + backgroundChoices
            guard choices > 0 else { return nil }
            let choice = self.random.next(below: choices)
            if choice < foregroundChoices { return self.foreground.removeFirst() }
            let task = self.pool.remove(at: choice - foregroundChoices)
            if task.isPending { return task }
            self.staleEntries -= 1  // cancelled: draw again
        }
    }

    // MARK: - Time

    /// The due time of the earliest delayed task that can fall due, dropping cancelled ones on the way.
    mutating func nextWaitingDueTime() -> Int64? {
        while let first = self.delayed.first {
            if first.task.isPending { return first.key.due == TaskKey.never ? nil : first.key.due }
            _ = self.delayed.removeFirst()
            self.staleEntries -= 1
        }
        return nil
    }
}
