/// A growable FIFO ring buffer: O(1) amortized append, O(1) removal from the front.
///
/// `Array.removeFirst()` is O(n); a test double that drains a million tasks through it is quadratic.
/// Slots hold optionals so a removed element (and the closure it captured) is released at once.
struct _RingBuffer<Element> {
    private var _slots: ContiguousArray<Element?> = []
    private var _head = 0
    private(set) var count = 0

    var isEmpty: Bool { self.count == 0 }

    /// The oldest element, or `nil` when empty.
    var first: Element? {
        self.count == 0 ? nil : self._slots[self._head]
    }

    /// Reads the oldest element in place (without copying it out), or returns `nil` when empty.
    @inline(__always)
    func peekFirst<Result>(_ body: (borrowing Element) -> Result) -> Result? {
        guard self.count > 0 else { return nil }
        return self._slots.withUnsafeBufferPointer { slots in
            switch slots[self._head] {
            case .some(let element): body(element)
            case .none: nil
            }
        }
    }

    @inline(__always)
    private func _slot(_ offset: Int) -> Int {
        let index = self._head + offset
        return index >= self._slots.count ? index - self._slots.count : index
    }

    /// The element `offset` places from the front.
    subscript(offset: Int) -> Element {
        get {
            precondition(offset >= 0 && offset < self.count, "ring buffer index \(offset) out of 0..<\(self.count)")
            // Occupied slots are never nil.
            return self._slots[self._slot(offset)].unsafelyUnwrapped
        }
        set {
            precondition(offset >= 0 && offset < self.count, "ring buffer index \(offset) out of 0..<\(self.count)")
            self._slots[self._slot(offset)] = newValue
        }
    }

    /// Appends `element` at the back.
    ///
    /// - Complexity: O(1) amortized.
    @inline(__always)
    mutating func append(_ element: Element) {
        if self.count == self._slots.count {
            self._grow()
        }
        self._slots[self._slot(self.count)] = element
        self.count += 1
    }

    /// Removes and returns the oldest element.
    ///
    /// - Complexity: O(1).
    @inline(__always)
    mutating func removeFirst() -> Element {
        precondition(self.count > 0, "removeFirst() on an empty ring buffer")
        let element = self._slots[self._head].unsafelyUnwrapped
        self._slots[self._head] = nil
        self._head += 1
        if self._head == self._slots.count { self._head = 0 }
        self.count -= 1
        return element
    }

    /// Removes and returns the element `offset` places from the front, keeping the others in order.
    ///
    /// - Complexity: O(`count`).
    mutating func remove(at offset: Int) -> Element {
        let element = self[offset]
        var index = offset
        while index + 1 < self.count {
            self._slots[self._slot(index)] = self._slots[self._slot(index + 1)]
            index += 1
        }
        self._slots[self._slot(self.count - 1)] = nil
        self.count -= 1
        return element
    }

    private mutating func _grow() {
        let capacity = Swift.max(16, self._slots.count * 2)
        var slots = ContiguousArray<Element?>(repeating: nil, count: capacity)
        // Swap the elements over: a move, where copying them would retain each one here and release it again
        // when the old storage goes.
        for offset in 0..<self.count {
            swap(&slots[offset], &self._slots[self._slot(offset)])
        }
        self._slots = slots
        self._head = 0
    }
}

extension _RingBuffer: Sendable where Element: Sendable {}
