import TaskDispatch

extension Schedule {
    /// Every invariant of ``Schedule`` that does not hold now, as messages with the values (list: `Docs/Design.md`).
    /// The tests check them after every operation (`checkInvariants()`); the dispatcher does not, since it walks every
    /// queue.
    func invariantViolations() -> [String] {
        var violations: [String] = []
        violations.append(
            if: self.now < 0 || self.now > TaskKey.latestTime,
            "now (\(self.now)) must lie in 0...TaskKey.latestTime (\(TaskKey.latestTime))")
        self.checkQueues(&violations)
        violations.append(
            if: self.history.count > self.historyLimit,
            "the history holds \(self.history.count) runs, over its limit of \(self.historyLimit)")
        for run in self.history {
            let sequence = run.task.key.sequence
            violations.append(
                if: run.task.state != .started, "the history holds task #\(sequence) in state \(run.task.state)")
            violations.append(
                if: run.start > self.now, "task #\(sequence) started at \(run.start), after now (\(self.now))")
        }
        for (previous, run) in zip(self.history, self.history.dropFirst()) where previous.start > run.start {
            violations.append(
                "the history is out of start order: a run at \(previous.start) before one at \(run.start)")
        }
        self.history.checkInvariants(name: "the history", &violations)
        violations += self.tracked.invariantViolations()
        for record in self.tracked.records.all where record.startedAt > self.now {
            violations.append("tracked task \(record.id) started at \(record.startedAt), after now (\(self.now))")
        }
        violations += self.waitingSettles.invariantViolations()
        violations += self.clockHold.invariantViolations(pendingCount: self.pendingCount)
        violations.append(
            if: self.claim == nil && self.waiters.contains(waitingFor: .runReleased),
            "an async run method waits for the run's release, but no run is claimed")
        return violations
    }

    /// Checks the due queues, the pool and the heap, and each counter against the entries they hold.
    private func checkQueues(_ violations: inout [String]) {
        var census: [String: Int] = [:]  // the entries each counter should count, by its name
        self.checkDueQueue(self.foreground, name: "the foreground queue", of: .foreground, nil, &census, &violations)
        let expectedQueues = Self.backgroundQueues(for: self.order).count
        violations.append(
            if: self.background.count != expectedQueues,
            "order \(self.order) needs \(expectedQueues) background queues, but the schedule has \(self.background.count)"
        )
        for (index, queue) in self.background.enumerated() {
            let priority = self.order == .priority ? index : nil
            self.checkDueQueue(
                queue, name: "background queue \(index)", of: .background, priority, &census, &violations)
        }
        violations.append(
            if: self.order.seed == nil && self.pool.tasks.count > 0,
            "the random pool holds \(self.pool.tasks.count) tasks under order \(self.order)")
        violations.append(
            if: self.pool.boundary < 0 || self.pool.boundary > self.pool.tasks.count,
            "the random pool's boundary (\(self.pool.boundary)) lies outside 0...\(self.pool.tasks.count)")
        for task in self.pool.tasks {
            violations.append(
                if: task.context != .background, "the random pool holds foreground task #\(task.key.sequence)")
            self.checkEntry(task, name: "the random pool", inHeap: false, &census, &violations)
        }
        let elements = self.delayed.elements
        for (index, element) in elements.enumerated() {
            let task = element.task
            violations.append(
                if: element.key != task.key,
                "the heap's element \(index) carries key \(element.key) for task #\(task.key.sequence) keyed \(task.key)"
            )
            violations.append(
                if: index > 0 && element.key < elements[(index - 1) / 2].key,
                "the heap is out of order: element \(index) (\(element.key)) precedes its parent (\(elements[(index - 1) / 2].key))"
            )
            violations.append(
                if: task.key.due > TaskKey.latestTime && task.key.due != TaskKey.never,
                "task #\(task.key.sequence) is due at \(task.key.due), past the clock but not never")
            self.checkEntry(task, name: "the delay heap", inHeap: true, &census, &violations)
        }
        let counters = [
            ("dueForeground", self.dueForeground),
            ("dueBackground", self.dueBackground),
            ("waitingForeground", self.waitingForeground),
            ("waitingBackground", self.waitingBackground),
            ("staleEntries", self.staleEntries),
        ]
        // A derived count is never negative, so this also catches a negative counter.
        for (name, kept) in counters where kept != census[name, default: 0] {
            violations.append(
                "\(name) is \(kept), but the queues and the heap hold \(census[name, default: 0]) such entries")
        }
    }

    /// Checks a due queue: its entries in key order, each of `context` (and in priority order, of `priority`).
    private func checkDueQueue(
        _ queue: RingBuffer<ScheduledTask>, name: String, of context: TaskContext, _ priority: Int?,
        _ census: inout [String: Int], _ violations: inout [String]
    ) {
        for (previous, task) in zip(queue, queue.dropFirst()) where !(previous.key < task.key) {
            violations.append("\(name) is out of key order: \(previous.key) before \(task.key)")
        }
        for task in queue {
            if task.context != context {
                violations.append("\(name) holds \(task.context) task #\(task.key.sequence)")
            } else if let priority, task.priority.rawValue != priority {
                violations.append(
                    "\(name) holds task #\(task.key.sequence) of priority \(task.priority) in priority order")
            }
            self.checkEntry(task, name: name, inHeap: false, &census, &violations)
        }
        queue.checkInvariants(name: name, &violations)
    }

    /// Checks an entry and counts it: its closure kept while pending, valid sequence and call site, and due by ``now``
    /// in a queue or the pool, after it in the heap, or cancelled (a task held twice shows in the counters).
    private func checkEntry(
        _ task: ScheduledTask, name: String, inHeap: Bool, _ census: inout [String: Int], _ violations: inout [String]
    ) {
        let sequence = task.key.sequence
        violations.append(
            if: sequence == 0 || sequence >= self.nextSequence,
            "task #\(sequence) in \(name) lies outside the sequences handed out (1..<\(self.nextSequence))")
        violations.append(
            if: Int(task.callSite) >= self.callSites.sites.count,
            "task #\(sequence) points at call site \(task.callSite) of \(self.callSites.sites.count)")
        violations.append(
            if: task.isPending != (task.work != nil),
            "task #\(sequence) in state \(task.state) \(task.work == nil ? "lost" : "kept") its closure")
        let isForeground = task.context == .foreground
        switch (task.state, inHeap) {
        case (.cancelled, _):
            census["staleEntries", default: 0] += 1
        case (.due, false):
            census[isForeground ? "dueForeground" : "dueBackground", default: 0] += 1
            violations.append(
                if: task.key.due > self.now,
                "due task #\(sequence) in \(name) is due at \(task.key.due), after now (\(self.now))")
        case (.waiting, true):
            census[isForeground ? "waitingForeground" : "waitingBackground", default: 0] += 1
            violations.append(
                if: task.key.due <= self.now,
                "delayed task #\(sequence) is due at \(task.key.due), not after now (\(self.now))")
        default:
            violations.append("\(name) holds task #\(sequence) in state \(task.state)")
        }
    }
}

extension RingBuffer {
    /// Adds a message unless exactly the `count` slots from `head` hold an element (a removed one is released).
    func checkInvariants(name: String, _ violations: inout [String]) {
        let capacity = self.slots.count
        guard self.count >= 0, self.count <= capacity, capacity == 0 || (0..<capacity).contains(self.head) else {
            violations.append(
                "\(name)'s ring buffer has count \(self.count) and head \(self.head) in \(capacity) slots")
            return
        }
        let filled = self.slots.count { $0 != nil }
        let occupied = (0..<self.count).lazy.map { (self.head + $0) % capacity }
        violations.append(
            if: filled != self.count || occupied.contains { self.slots[$0] == nil },
            "\(name)'s ring buffer fills \(filled) slots, not the \(self.count) from slot \(self.head)")
    }
}

extension [String] {
    /// Appends `message` if `broken`: one call for each invariant an `invariantViolations()` checks.
    mutating func append(if broken: Bool, _ message: @autoclosure () -> String) {
        if broken { self.append(message()) }
    }
}
