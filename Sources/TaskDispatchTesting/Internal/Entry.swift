import TaskDispatch

/// One pending task inside a ``ManualDispatcher``.
///
/// Kept small on purpose (the benchmark checks the memory per pending task): the field order packs the
/// one-byte priority into the padding after the closure enum, and time is stored as nanoseconds.
struct _Entry: Sendable {
    var work: DispatchedTask.Work
    var priority: BackgroundPriority
    var sequence: UInt64
    /// Due time on the virtual clock, in nanoseconds since the dispatcher was created.
    var due: Int64
    var label: String?
    var callSite: CallSite

    var context: TaskContext {
        switch self.work {
        case .foreground: .foreground
        case .background: .background
        }
    }

    /// Ordering by (due time, sequence): the order in which due work runs.
    @inline(__always)
    func runsBefore(_ other: _Entry) -> Bool {
        self.due != other.due ? self.due < other.due : self.sequence < other.sequence
    }
}

/// A binary min-heap of entries ordered by (due time, sequence).
///
/// Delayed tasks live here until the virtual clock reaches them: O(log n) to insert and to remove the
/// earliest, never a sort per step. The heap itself holds only plain keys (due time, sequence, slot); the
/// entries, with their closures and labels, stay put in `slots`, so sifting moves 24 trivial bytes per level
/// instead of copying (retaining and releasing) a whole entry.
struct _EntryHeap: Sendable {
    struct Key: Sendable {
        var due: Int64
        var sequence: UInt64
        var slot: Int

        @inline(__always)
        func runsBefore(_ other: Key) -> Bool {
            self.due != other.due ? self.due < other.due : self.sequence < other.sequence
        }
    }

    private var keys: ContiguousArray<Key> = []
    private var slots: ContiguousArray<_Entry?> = []
    private var freeSlots: [Int] = []

    var isEmpty: Bool { self.keys.isEmpty }
    var count: Int { self.keys.count }
    /// The key of the earliest entry, without copying the entry.
    var minKey: Key? { self.keys.first }
    var min: _Entry? { self.keys.first.map { self.slots[$0.slot].unsafelyUnwrapped } }

    /// The entries, in no particular order.
    var storage: [_Entry] { self.keys.map { self.slots[$0.slot].unsafelyUnwrapped } }

    /// - Complexity: O(log n).
    mutating func insert(_ entry: _Entry) {
        let slot: Int
        if let free = self.freeSlots.popLast() {
            slot = free
            self.slots[slot] = entry
        } else {
            slot = self.slots.count
            self.slots.append(entry)
        }
        self.keys.append(Key(due: entry.due, sequence: entry.sequence, slot: slot))
        self.keys.withUnsafeMutableBufferPointer { keys in
            var child = keys.count - 1
            let key = keys[child]
            while child > 0 {
                let parent = (child - 1) / 2
                guard key.runsBefore(keys[parent]) else { break }
                keys[child] = keys[parent]
                child = parent
            }
            keys[child] = key
        }
    }

    /// - Complexity: O(log n).
    mutating func removeMin() -> _Entry? {
        guard let first = self.keys.first else { return nil }
        let last = self.keys.removeLast()
        if !self.keys.isEmpty {
            self.keys.withUnsafeMutableBufferPointer { keys in
                let count = keys.count
                var parent = 0
                while true {
                    let left = 2 * parent + 1
                    guard left < count else { break }
                    var smallest = left
                    if left + 1 < count && keys[left + 1].runsBefore(keys[left]) { smallest = left + 1 }
                    guard keys[smallest].runsBefore(last) else { break }
                    keys[parent] = keys[smallest]
                    parent = smallest
                }
                keys[parent] = last
            }
        }
        let entry = self.slots[first.slot]
        self.slots[first.slot] = nil
        if self.keys.isEmpty {
            self.slots.removeAll(keepingCapacity: true)
            self.freeSlots.removeAll(keepingCapacity: true)
        } else {
            self.freeSlots.append(first.slot)
        }
        return entry
    }
}

/// What the dispatcher knows about every task from the oldest unfinished one on: one byte each.
///
/// A handle holds only a sequence number, so cancelling must find the task's state without searching
/// the queues: this is that state, indexed by sequence. Finished entries at the front are dropped as they
/// finish, so the buffer spans only the tasks between the oldest pending one and the newest.
struct _TaskStates: Sendable {
    static let finished: UInt8 = 1  // ran, is running, or was cancelled
    static let foreground: UInt8 = 2
    static let delayed: UInt8 = 4  // waiting in the heap for the clock

    /// The sequence number of the first flag in `flags`.
    private var _base: UInt64 = 1
    private var _flags = _RingBuffer<UInt8>()

    /// Records the next task; sequences are dense, so the new task's sequence is `_base + count`.
    @inline(__always)
    mutating func append(_ flags: UInt8) {
        self._flags.append(flags)
    }

    /// The flags of task `sequence`; tasks before the window are finished.
    @inline(__always)
    func flags(_ sequence: UInt64) -> UInt8 {
        guard sequence >= self._base else { return Self.finished }
        let offset = Int(sequence - self._base)
        guard offset < self._flags.count else { return Self.finished }
        return self._flags[offset]
    }

    @inline(__always)
    mutating func set(_ sequence: UInt64, _ flags: UInt8) {
        guard sequence >= self._base else { return }
        self._flags[Int(sequence - self._base)] = flags
        if flags & Self.finished != 0 && sequence == self._base {
            self._dropFinishedPrefix()
        }
    }

    private mutating func _dropFinishedPrefix() {
        while let first = self._flags.first, first & Self.finished != 0 {
            _ = self._flags.removeFirst()
            self._base += 1
        }
    }
}

/// SplitMix64: a small, fast generator whose whole state is its seed, so a seed replays an order exactly.
struct _SplitMix64: Sendable {
    private var _state: UInt64

    init(seed: UInt64) {
        self._state = seed
    }

    mutating func next() -> UInt64 {
        self._state &+= 0x9E37_79B9_7F4A_7C15
        var z = self._state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform integer in `0..<upperBound`.
    mutating func next(below upperBound: Int) -> Int {
        precondition(upperBound > 0)
        return Int(self.next() % UInt64(upperBound))
    }
}

extension Duration {
    /// Nanoseconds, saturating at the bounds of `Int64`.
    var _nanoseconds: Int64 {
        let (seconds, attoseconds) = self.components
        let (secondsPart, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflow2) = secondsPart.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return total
    }
}

/// Formats virtual time for messages: `0 s`, `1.5 s`, `250 ms`.
func _formatTime(_ nanoseconds: Int64) -> String {
    if nanoseconds == 0 { return "0 s" }
    if nanoseconds % 1_000_000_000 == 0 { return "\(nanoseconds / 1_000_000_000) s" }
    if nanoseconds % 1_000_000 == 0 { return "\(nanoseconds / 1_000_000) ms" }
    if nanoseconds % 1_000 == 0 { return "\(nanoseconds / 1_000) µs" }
    return "\(nanoseconds) ns"
}
