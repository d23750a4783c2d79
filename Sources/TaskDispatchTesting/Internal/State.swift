import TaskDispatch

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Bionic)
    import Bionic
#endif

/// Which due tasks a step may choose from.
enum _Scope {
    case foreground
    case background
    case any
}

/// The run method in progress, so that a second one can be told apart from a re-entrant call.
struct _ActiveRun: Sendable {
    var method: String
    var thread: UInt
    /// The context of the task being executed right now, if any.
    var executing: TaskContext?
}

func _currentThreadID() -> UInt {
    #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
    #else
        UInt(pthread_self())
    #endif
}

func _yieldThread() {
    sched_yield()
}

func _writeToStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(2, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
            guard written > 0 else { return }
            offset += written
        }
    }
}

/// Everything a ``ManualDispatcher`` knows, guarded by its one lock.
///
/// Due tasks wait in FIFO ring buffers (one for the foreground, one per background priority), each kept in
/// (due time, sequence) order: immediate tasks are appended with `due == now`, and delayed tasks move over
/// from the heap, in heap order, the moment the clock reaches them, before anything else can be dispatched at
/// that time. Delayed tasks wait in a heap keyed by (due time, sequence). Cancelled tasks stay in place as
/// tombstones, marked finished in `flags`, and are dropped when they reach the front.
struct _State: Sendable {
    var now: Int64 = 0
    var nextSequence: UInt64 = 1
    var foreground = _RingBuffer<_Entry>()
    var background = [_RingBuffer<_Entry>](repeating: _RingBuffer(), count: BackgroundPriority.allCases.count)
    var delayed = _EntryHeap()
    var flags = _TaskStates()
    var cancelled = Set<UInt64>()
    var dueForeground = 0
    var dueBackground = 0
    var delayedForeground = 0
    var delayedBackground = 0
    var history = _RingBuffer<_Run>()
    let historyLimit: Int
    var order: ManualDispatcher.Order
    var random: _SplitMix64
    var autoDrain: Bool
    var activeRun: _ActiveRun?
    var deferredError: ManualDispatcherError?
    /// Tasks suspended in an async step or wait (ManualDispatcher+Waiting.swift); a dispatch wakes them.
    var waiters = DispatchWaiters<WaitResumer>()

    init(order: ManualDispatcher.Order, autoDrain: Bool, historyLimit: Int) {
        self.order = order
        self.random = _SplitMix64(seed: order.seed ?? 0)
        self.autoDrain = autoDrain
        self.historyLimit = historyLimit
    }

    var pendingCount: Int {
        self.dueForeground + self.dueBackground + self.delayedForeground + self.delayedBackground
    }

    var hasDueTask: Bool {
        self.dueForeground + self.dueBackground > 0
    }

    // MARK: Accepting

    mutating func accept(_ task: DispatchedTask) -> UInt64 {
        let sequence = self.nextSequence
        self.nextSequence += 1
        // Most tasks are not delayed: skip the 128-bit arithmetic of `Duration.components` for them.
        let delay = task.delay > .zero ? task.delay._nanoseconds : 0
        let isDelayed = delay > 0
        let due = isDelayed ? self.now.addingReportingOverflow(delay).partialValue : self.now
        let entry = _Entry(
            work: task.work,
            priority: task.priority,
            sequence: sequence,
            due: due < self.now ? .max : due,
            label: task.label,
            callSite: task.callSite
        )
        let isForeground = entry.context == .foreground
        var flags: UInt8 = isForeground ? _TaskStates.foreground : 0
        if isDelayed {
            flags |= _TaskStates.delayed
            self.delayed.insert(entry)
            if isForeground { self.delayedForeground += 1 } else { self.delayedBackground += 1 }
        } else if isForeground {
            self.foreground.append(entry)
            self.dueForeground += 1
        } else {
            self.background[task.priority.rawValue].append(entry)
            self.dueBackground += 1
        }
        self.flags.append(flags)
        return sequence
    }

    mutating func cancel(_ sequence: UInt64) -> Bool {
        let flags = self.flags.flags(sequence)
        guard flags & _TaskStates.finished == 0 else { return false }
        self.flags.set(sequence, flags | _TaskStates.finished)
        self.cancelled.insert(sequence)
        switch (flags & _TaskStates.foreground != 0, flags & _TaskStates.delayed != 0) {
        case (true, true): self.delayedForeground -= 1
        case (true, false): self.dueForeground -= 1
        case (false, true): self.delayedBackground -= 1
        case (false, false): self.dueBackground -= 1
        }
        return true
    }

    // MARK: Time

    /// Moves every delayed task due at or before `time` into the due queues, in (due, sequence) order.
    mutating func promote(through time: Int64) {
        while let first = self.delayed.minKey, first.due <= time {
            guard let entry = self.delayed.removeMin() else { break }
            let flags = self.flags.flags(entry.sequence)
            guard flags & _TaskStates.finished == 0 else { continue }  // cancelled while waiting
            self.flags.set(entry.sequence, flags & ~_TaskStates.delayed)
            if entry.context == .foreground {
                self.delayedForeground -= 1
                self.dueForeground += 1
                self.foreground.append(entry)
            } else {
                self.delayedBackground -= 1
                self.dueBackground += 1
                self.background[entry.priority.rawValue].append(entry)
            }
        }
    }

    /// The due time of the earliest live delayed task, dropping cancelled ones on the way.
    mutating func nextDelayedDueTime() -> Int64? {
        while let first = self.delayed.minKey {
            if self.flags.flags(first.sequence) & _TaskStates.finished == 0 { return first.due }
            _ = self.delayed.removeMin()
        }
        return nil
    }

    /// Moves the clock to the next delayed task if nothing is due and that task falls due by `limit`.
    mutating func jumpToNextDelayed(notAfter limit: Int64) -> Bool {
        guard !self.hasDueTask, let next = self.nextDelayedDueTime(), next <= limit else { return false }
        self.now = Swift.max(self.now, next)
        self.promote(through: self.now)
        return true
    }

    // MARK: Choosing

    @inline(__always)
    private func _isLive(_ entry: _Entry) -> Bool {
        self.flags.flags(entry.sequence) & _TaskStates.finished == 0
    }

    @inline(__always)
    private func _isLive(sequence: UInt64) -> Bool {
        self.flags.flags(sequence) & _TaskStates.finished == 0
    }

    @inline(__always)
    private mutating func _trimForeground() {
        while let first = self.foreground.peekFirst({ $0.sequence }), !self._isLive(sequence: first) {
            _ = self.foreground.removeFirst()
        }
    }

    @inline(__always)
    private mutating func _trimBackground(_ index: Int) {
        while let first = self.background[index].peekFirst({ $0.sequence }), !self._isLive(sequence: first) {
            _ = self.background[index].removeFirst()
        }
    }

    /// Removes and returns the next task to run in `scope` among tasks dispatched before `sequenceLimit`.
    ///
    /// - Complexity: O(1) amortized in dispatch and priority order; O(number of due tasks) in random order.
    mutating func popNext(_ scope: _Scope, sequenceLimit: UInt64 = .max) -> _Entry? {
        if case .random = self.order {
            return self._popRandom(scope, sequenceLimit: sequenceLimit)
        }
        // Candidates are compared by (due, sequence) keys read in place: copying a whole entry out of its
        // ring buffer would retain and release its closure and label.
        @inline(__always)
        func key(_ entry: borrowing _Entry) -> (due: Int64, sequence: UInt64) { (entry.due, entry.sequence) }
        @inline(__always)
        func before(_ lhs: (due: Int64, sequence: UInt64), _ rhs: (due: Int64, sequence: UInt64)) -> Bool {
            lhs.due != rhs.due ? lhs.due < rhs.due : lhs.sequence < rhs.sequence
        }
        var foregroundCandidate: (due: Int64, sequence: UInt64)?
        if scope != .background && self.dueForeground > 0 {
            self._trimForeground()
            if let first = self.foreground.peekFirst(key), first.sequence < sequenceLimit {
                foregroundCandidate = first
            }
        }
        var backgroundIndex = -1
        var backgroundCandidate: (due: Int64, sequence: UInt64)?
        if scope != .foreground && self.dueBackground > 0 {
            let byPriority = self.order == .priority
            for index in stride(from: self.background.count - 1, through: 0, by: -1)
            where !self.background[index].isEmpty {
                self._trimBackground(index)
                guard let first = self.background[index].peekFirst(key), first.sequence < sequenceLimit else {
                    continue
                }
                if let current = backgroundCandidate, !before(first, current) { continue }
                backgroundCandidate = first
                backgroundIndex = index
                if byPriority { break }
            }
        }
        switch (foregroundCandidate, backgroundCandidate) {
        case (nil, nil):
            return nil
        case (let foreground?, let background?) where before(background, foreground):
            return self._take(backgroundIndex)
        case (nil, _?):
            return self._take(backgroundIndex)
        default:
            return self._take(-1)
        }
    }

    private mutating func _popRandom(_ scope: _Scope, sequenceLimit: UInt64) -> _Entry? {
        // Candidates: the oldest foreground task (the main queue is serial) and every due background task.
        var candidates: [(queue: Int, offset: Int)] = []
        if scope != .background && self.dueForeground > 0 {
            self._trimForeground()
            if let first = self.foreground.first, first.sequence < sequenceLimit { candidates.append((-1, 0)) }
        }
        if scope != .foreground && self.dueBackground > 0 {
            for index in self.background.indices {
                for offset in 0..<self.background[index].count {
                    let entry = self.background[index][offset]
                    if self._isLive(entry) && entry.sequence < sequenceLimit { candidates.append((index, offset)) }
                }
            }
        }
        guard !candidates.isEmpty else { return nil }
        let choice = candidates[self.random.next(below: candidates.count)]
        if choice.queue < 0 { return self._take(-1) }
        let entry = self.background[choice.queue].remove(at: choice.offset)
        return self._markStarted(entry)
    }

    @inline(__always)
    private mutating func _take(_ queue: Int) -> _Entry {
        let entry = queue < 0 ? self.foreground.removeFirst() : self.background[queue].removeFirst()
        return self._markStarted(entry)
    }

    @inline(__always)
    private mutating func _markStarted(_ entry: _Entry) -> _Entry {
        let isForeground = entry.context == .foreground
        self.flags.set(entry.sequence, _TaskStates.finished | (isForeground ? _TaskStates.foreground : 0))
        if isForeground { self.dueForeground -= 1 } else { self.dueBackground -= 1 }
        if self.historyLimit > 0 {
            if self.history.count == self.historyLimit { _ = self.history.removeFirst() }
            self.history.append(
                _Run(
                    sequence: entry.sequence,
                    due: entry.due,
                    start: self.now,
                    label: entry.label,
                    callSite: entry.callSite,
                    priority: entry.priority,
                    context: entry.context
                )
            )
        }
        return entry
    }

    // MARK: Describing

    var pendingTasks: [ManualDispatcher.PendingTask] {
        var entries: [_Entry] = []
        entries.reserveCapacity(self.pendingCount)
        for offset in 0..<self.foreground.count where self._isLive(self.foreground[offset]) {
            entries.append(self.foreground[offset])
        }
        for queue in self.background {
            for offset in 0..<queue.count where self._isLive(queue[offset]) { entries.append(queue[offset]) }
        }
        for entry in self.delayed.storage where self._isLive(entry) { entries.append(entry) }
        entries.sort { $0.runsBefore($1) }
        return entries.map(\.summary)
    }

    var historyArray: [ManualDispatcher.TaskRun] {
        (0..<self.history.count).map { self.history[$0].taskRun }
    }

    func makeError(_ kind: ManualDispatcherError.Kind, _ summary: String) -> ManualDispatcherError {
        ManualDispatcherError(
            kind: kind,
            summary: summary,
            pendingTasks: self.pendingTasks,
            recentRuns: self.historyArray,
            seed: self.order.seed
        )
    }

    /// A sentence about what is pending besides `context`, with the next step to take.
    func describeOtherWork(besides scope: _Scope) -> String {
        var parts: [String] = []
        let pending = self.pendingTasks
        func list(_ tasks: [ManualDispatcher.PendingTask]) -> String {
            let named = tasks.prefix(3).map { task in
                (task.label.map { "\"\($0)\"" } ?? "(no label)") + " from \(task.callSite)"
            }
            return named.joined(separator: ", ") + (tasks.count > 3 ? ", …" : "")
        }
        let now = self.now
        let dueForeground = pending.filter { $0.context == .foreground && $0.dueTime._nanoseconds <= now }
        let dueBackground = pending.filter { $0.context == .background && $0.dueTime._nanoseconds <= now }
        let later = pending.filter { $0.dueTime._nanoseconds > now }
        if scope == .background && !dueForeground.isEmpty {
            parts.append(
                "\(_count(dueForeground.count, "foreground task")) \(dueForeground.count == 1 ? "is" : "are") due "
                    + "(\(list(dueForeground))): run it with runNextForeground() or runNext()"
            )
        }
        if scope == .foreground && !dueBackground.isEmpty {
            parts.append(
                "\(_count(dueBackground.count, "background task")) \(dueBackground.count == 1 ? "is" : "are") due "
                    + "(\(list(dueBackground))): run it with runNextBackground() or runNext()"
            )
        }
        if let first = later.first {
            parts.append(
                "\(_count(later.count, "delayed task")) \(later.count == 1 ? "waits" : "wait") for the clock, "
                    + "the first (\(list([first]))) due at \(_formatTime(first.dueTime._nanoseconds)): "
                    + "move the clock with advance(by:) or advance(to:), or use runUntilIdle()"
            )
        }
        if parts.isEmpty {
            return "nothing else is pending either: check that the code under test was given this dispatcher "
                + "and dispatched its work"
        }
        return parts.joined(separator: "; ")
    }
}

func _count(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}

/// One run in the history, kept in plain fields: the public `TaskRun` (two `Duration`s, a `PendingTask`) is
/// built only when someone reads the history, not for every task that runs.
struct _Run: Sendable {
    var sequence: UInt64
    var due: Int64
    var start: Int64
    var label: String?
    var callSite: CallSite
    var priority: BackgroundPriority
    var context: TaskContext

    var taskRun: ManualDispatcher.TaskRun {
        ManualDispatcher.TaskRun(
            task: ManualDispatcher.PendingTask(
                sequence: self.sequence,
                context: self.context,
                label: self.label,
                callSite: self.callSite,
                priority: self.priority,
                dueTime: .nanoseconds(self.due)
            ),
            startTime: .nanoseconds(self.start)
        )
    }
}

extension _Entry {
    var summary: ManualDispatcher.PendingTask {
        ManualDispatcher.PendingTask(
            sequence: self.sequence,
            context: self.context,
            label: self.label,
            callSite: self.callSite,
            priority: self.priority,
            dueTime: .nanoseconds(self.due)
        )
    }
}

extension ManualDispatcher.Order {
    var seed: UInt64? {
        if case .random(let seed) = self { return seed }
        return nil
    }
}
