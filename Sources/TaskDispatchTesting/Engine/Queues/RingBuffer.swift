/// A growable FIFO ring buffer (`Array.removeFirst()` is O(n)); its slots hold optionals, to release at removal.
struct RingBuffer<Element> {
    private(set) var slots: ContiguousArray<Element?> = []
    private(set) var head = 0
    private(set) var count = 0

    @inline(__always)
    var first: Element? {
        self.count == 0 ? nil : self.slots[self.head]
    }

    @inline(__always)
    private func slot(_ offset: Int) -> Int {
        let index = self.head + offset
        return index >= self.slots.count ? index - self.slots.count : index
    }

    /// The element `offset` places from the front.
    subscript(offset: Int) -> Element {
        precondition(offset >= 0 && offset < self.count, "ring buffer index \(offset) out of 0..<\(self.count)")
        // Occupied slots are never nil.
        return self.slots[self.slot(offset)].unsafelyUnwrapped
    }

    /// Appends `element` at the back in O(1) amortized.
    @inline(__always)
    mutating func append(_ element: Element) {
        if self.count == self.slots.count {
            self.grow()
        }
        self.slots[self.slot(self.count)] = element
        self.count += 1
    }

    /// Removes and returns the oldest element.
    @inline(__always)
    mutating func removeFirst() -> Element {
        precondition(self.count > 0, "removeFirst() on an empty ring buffer")
        let element = self.slots[self.head].take().unsafelyUnwrapped
        self.head += 1
        if self.head == self.slots.count { self.head = 0 }
        self.count -= 1
        return element
    }

    /// Removes the elements for which `shouldBeRemoved` is true, keeping the others in order.
    mutating func removeAll(where shouldBeRemoved: (Element) -> Bool) {
        var kept = RingBuffer()
        for element in self where !shouldBeRemoved(element) { kept.append(element) }
        self = kept
    }

    /// Doubles the slots, called when they are full: the array grows in place (its elements move bitwise), then the
    /// elements that wrapped around to the front move behind the others. Capacity beyond the slots is never written.
    private mutating func grow() {
        let old = self.slots.count
        self.slots.append(contentsOf: repeatElement(nil, count: Swift.max(16, old)))
        // Full, so the elements are slots[head..<old] and then slots[0..<head]: move the second run to
        // slots[old..<old + head], which holds nils. A swap moves; it neither retains nor releases.
        for offset in 0..<self.head {
            self.slots.swapAt(offset, old + offset)
        }
    }
}

extension RingBuffer: RandomAccessCollection {
    var startIndex: Int { 0 }
    var endIndex: Int { self.count }
}

extension RingBuffer: Sendable where Element: Sendable {}
