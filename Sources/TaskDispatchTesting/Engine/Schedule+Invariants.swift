import TaskDispatch

extension Schedule {
    /// Stops the process with a message naming the first broken invariant, if any (see ``invariantViolations()``).
    ///
    /// Tests call it after every operation; it is not called from the dispatcher's own paths, because it walks
    /// every queue (see the complexity note), which would make a drain of n tasks quadratic.
    ///
    /// - Complexity: O(n log n) in the entries the queues, the pool and the heap hold, plus the history and the
    ///   tracked tasks.
    func checkInvariants() {
        let violations = self.invariantViolations()
        precondition(
            violations.isEmpty,
            "Schedule invariant broken: \(violations.joined(separator: "; "))"
        )
    }

    /// Every invariant of ``Schedule`` (stated in its header and on its counters) that does not hold now, each as
    /// a message naming the invariant and the values that break it; empty when the schedule is consistent.
    ///
    /// Checked:
    /// - each counter (``dueForeground``, ``dueBackground``, ``waitingForeground``, ``waitingBackground``,
    ///   ``staleEntries``) equals what it counts, derived by walking the queues, the pool and the heap;
    /// - a task in a due queue or the pool is due or cancelled, and due at or before ``now``; a task in the heap is
    ///   waiting or cancelled, and due after ``now``;
    /// - each due queue is in key order, the heap is a heap, and each element's key is its task's key;
    /// - the queues match the order (one background queue in dispatch order, one per priority holding only that
    ///   priority in priority order, the pool only in random order);
    /// - ``now`` lies in `0...TaskKey.latestTime`; every sequence lies below the next one;
    /// - the history holds at most `historyLimit` started tasks, in start order, none later than ``now``;
    /// - call-site indices point into the table; the random pool's boundary lies within it;
    /// - the tracked tasks' records agree with one another (``TrackedTasks/invariantViolations()``): the failed
    ///   records are the unobserved errors, and `ids` mirrors the records' keys;
    /// - no waiting async drain has had more tasks run for it than its runaway bound left
    ///   (``WaitingSettles/invariantViolations()``);
    /// - the clock hold counts no fewer than zero waits of the test (``ClockHold/invariantViolations()``);
    /// - no async run method waits for the run's release while no run is claimed: each release wakes them in its
    ///   critical section.
    ///
    /// - Complexity: As ``checkInvariants()``.
    func invariantViolations() -> [String] {
        var violations: [String] = []
        if self.now < 0 || self.now > TaskKey.latestTime {
            violations.append("now (\(self.now)) must lie in 0...TaskKey.latestTime (\(TaskKey.latestTime))")
        }
        var census = Census()
        self.checkForeground(&census, &violations)
        self.checkBackground(&census, &violations)
        self.checkDelayed(&census, &violations)
        let counters: [(String, Int, Int)] = [
            ("dueForeground", self.dueForeground, census.dueForeground),
            ("dueBackground", self.dueBackground, census.dueBackground),
            ("waitingForeground", self.waitingForeground, census.waitingForeground),
            ("waitingBackground", self.waitingBackground, census.waitingBackground),
            ("staleEntries", self.staleEntries, census.stale),
        ]
        for (name, kept, derived) in counters where kept != derived {
            violations.append("\(name) is \(kept), but the queues and the heap hold \(derived) such entries")
        }
        for (name, value) in counters.map({ ($0.0, $0.1) }) where value < 0 {
            violations.append("\(name) is negative (\(value))")
        }
        self.checkHistory(&violations)
        violations += self.tracked.invariantViolations()
        violations += self.waitingSettles.invariantViolations()
        violations += self.clockHold.invariantViolations()
        if self.claim == nil && self.waiters.contains(waitingFor: .runReleased) {
            violations.append("an async run method waits for the run's release, but no run is claimed")
        }
        return violations
    }

    /// What walking the queues found.
    private struct Census {
        var dueForeground = 0
        var dueBackground = 0
        var waitingForeground = 0
        var waitingBackground = 0
        var stale = 0
    }

    private func checkForeground(_ census: inout Census, _ violations: inout [String]) {
        self.checkDueQueue(self.foreground, name: "the foreground queue", &census, &violations) { task in
            task.context == .foreground ? nil : "holds background task #\(task.key.sequence)"
        }
    }

    private func checkBackground(_ census: inout Census, _ violations: inout [String]) {
        let expectedQueues =
            switch self.order {
            case .dispatch: 1
            case .priority: BackgroundPriority.allCases.count
            case .random: 0
            }
        if self.background.count != expectedQueues {
            violations.append(
                "order \(self.order) needs \(expectedQueues) background queues, but the schedule has \(self.background.count)"
            )
        }
        for (index, queue) in self.background.enumerated() {
            let isPriority = self.order == .priority
            self.checkDueQueue(queue, name: "background queue \(index)", &census, &violations) { task in
                if task.context != .background { return "holds foreground task #\(task.key.sequence)" }
                guard isPriority, task.priority.rawValue != index else { return nil }
                return "holds task #\(task.key.sequence) of priority \(task.priority) in priority order"
            }
        }
        if self.order.seed == nil && self.pool.count > 0 {
            violations.append("the random pool holds \(self.pool.count) tasks under order \(self.order)")
        }
        if self.pool.boundary < 0 || self.pool.boundary > self.pool.count {
            violations.append("the random pool's boundary (\(self.pool.boundary)) lies outside 0...\(self.pool.count)")
        }
        for task in self.pool.tasks {
            if task.context != .background {
                violations.append("the random pool holds foreground task #\(task.key.sequence)")
            }
            self.checkDueEntry(task, name: "the random pool", &census, &violations)
        }
    }

    private func checkDelayed(_ census: inout Census, _ violations: inout [String]) {
        let elements = self.delayed.elements
        for index in elements.indices {
            let element = elements[index]
            let task = element.task
            if element.key != task.key {
                violations.append(
                    "the heap's element \(index) carries key \(element.key) for task #\(task.key.sequence) keyed \(task.key)"
                )
            }
            if index > 0, element.key < elements[(index - 1) / 2].key {
                violations.append(
                    "the heap is out of order: element \(index) (\(element.key)) precedes its parent (\(elements[(index - 1) / 2].key))"
                )
            }
            if task.key.due > TaskKey.latestTime && task.key.due != TaskKey.never {
                violations.append("task #\(task.key.sequence) is due at \(task.key.due), past the clock but not never")
            }
            self.checkCommon(task, name: "the delay heap", &census, &violations)
            switch task.state {
            case .cancelled:
                census.stale += 1
            case .waiting:
                if task.context == .foreground { census.waitingForeground += 1 } else { census.waitingBackground += 1 }
                if task.key.due <= self.now {
                    violations.append(
                        "delayed task #\(task.key.sequence) is due at \(task.key.due), not after now (\(self.now))"
                    )
                }
            case .due, .started:
                violations.append("the delay heap holds task #\(task.key.sequence) in state \(task.state)")
            }
        }
    }

    /// Checks a due queue: its entries in key order, each due or cancelled, due at or before ``now``.
    private func checkDueQueue(
        _ queue: RingBuffer<ScheduledTask>,
        name: String,
        _ census: inout Census,
        _ violations: inout [String],
        placement: (ScheduledTask) -> String?
    ) {
        var previous: TaskKey?
        for task in queue {
            if let previous, !(previous < task.key) {
                violations.append("\(name) is out of key order: \(previous) before \(task.key)")
            }
            previous = task.key
            if let misplaced = placement(task) { violations.append("\(name) \(misplaced)") }
            self.checkDueEntry(task, name: name, &census, &violations)
        }
        queue.checkInvariants(name: name, &violations)
    }

    private func checkDueEntry(
        _ task: ScheduledTask,
        name: String,
        _ census: inout Census,
        _ violations: inout [String]
    ) {
        self.checkCommon(task, name: name, &census, &violations)
        switch task.state {
        case .cancelled:
            census.stale += 1
        case .due:
            if task.context == .foreground { census.dueForeground += 1 } else { census.dueBackground += 1 }
            if task.key.due > self.now {
                violations.append(
                    "due task #\(task.key.sequence) in \(name) is due at \(task.key.due), after now (\(self.now))")
            }
        case .waiting, .started:
            violations.append("\(name) holds task #\(task.key.sequence) in state \(task.state)")
        }
    }

    /// Checks what holds for every entry: its work is there exactly while it is pending, and its sequence and call
    /// site are valid. (A pending task held twice shows as a counter that does not match its census.)
    private func checkCommon(
        _ task: ScheduledTask,
        name: String,
        _ census: inout Census,
        _ violations: inout [String]
    ) {
        let sequence = task.key.sequence
        if sequence == 0 || sequence >= self.nextSequence {
            violations.append(
                "task #\(sequence) in \(name) lies outside the sequences handed out (1..<\(self.nextSequence))")
        }
        if Int(task.callSite) >= self.callSites.sites.count {
            violations.append("task #\(sequence) points at call site \(task.callSite) of \(self.callSites.sites.count)")
        }
        if task.isPending != (task.work != nil) {
            violations.append(
                "task #\(sequence) in state \(task.state) \(task.work == nil ? "lost" : "kept") its closure")
        }
    }

    private func checkHistory(_ violations: inout [String]) {
        if self.history.count > self.historyLimit {
            violations.append("the history holds \(self.history.count) runs, over its limit of \(self.historyLimit)")
        }
        var previous: RunRecord?
        for run in self.history {
            if run.task.state != .started {
                violations.append("the history holds task #\(run.task.key.sequence) in state \(run.task.state)")
            }
            if run.start > self.now {
                violations.append("task #\(run.task.key.sequence) started at \(run.start), after now (\(self.now))")
            }
            if let previous, previous.start > run.start {
                violations.append(
                    "the history is out of start order: a run at \(previous.start) before one at \(run.start)"
                )
            }
            previous = run
        }
        self.history.checkInvariants(name: "the history", &violations)
    }
}

extension RingBuffer {
    /// Adds a message for each broken invariant of the buffer: the count fits the storage, the occupied slots
    /// (`count` of them from `head`, wrapping) hold an element, and the free ones hold none, so a removed element
    /// is released at once.
    func checkInvariants(name: String, _ violations: inout [String]) {
        let capacity = self.slots.count
        guard self.count >= 0, self.count <= capacity, capacity == 0 || (0..<capacity).contains(self.head) else {
            violations.append(
                "\(name)'s ring buffer has count \(self.count) and head \(self.head) in \(capacity) slots")
            return
        }
        for index in 0..<capacity {
            let offset = index >= self.head ? index - self.head : index + capacity - self.head
            let occupied = offset < self.count
            if occupied != (self.slots[index] != nil) {
                violations.append(
                    "\(name)'s ring buffer slot \(index) is \(occupied ? "empty inside" : "filled outside") its \(self.count) elements from slot \(self.head)"
                )
            }
        }
    }
}
