extension TrackedTasks {
    /// The records by identity, found without hashing: an identity's low 32 bits name the slot its record is in, and
    /// its high bits the order the tasks began in, so identities sort oldest first. A finished task's slot is reused:
    /// the slots grow with the tasks tracked at once, not with those ever tracked.
    struct Records: Sendable {
        private var slots: [Record?] = []
        /// The empty slots, the last emptied last.
        private var free: [Int] = []
        /// The high bits of the next identity handed out (they wrap after 2³² tasks on one dispatcher).
        private(set) var nextOrder: UInt64 = 1

        /// How many records there are (stored: every dispatch reads it).
        private(set) var count = 0

        var all: some Sequence<Record> { self.slots.lazy.compactMap { $0 } }

        /// The records' identities, in no particular order: read in place, without a copy of each record.
        var ids: some Sequence<UInt64> { self.slots.lazy.compactMap { $0?.id } }

        /// Stores the record `make` builds for its identity, and returns that identity.
        mutating func insert(_ make: (UInt64) -> Record) -> UInt64 {
            let slot = self.free.popLast() ?? self.slots.count
            let id = self.nextOrder &<< 32 | UInt64(slot)
            self.nextOrder &+= 1
            if slot == self.slots.count { self.slots.append(make(id)) } else { self.slots[slot] = make(id) }
            self.count += 1
            return id
        }

        subscript(id: UInt64) -> Record? { self.slot(of: id).flatMap { self.slots[$0] } }

        /// Changes record `id` in place (no copy of it), if it exists, and returns what `change` returns.
        @discardableResult
        mutating func update<Result>(_ id: UInt64, _ change: (inout Record) -> Result) -> Result? {
            self.slot(of: id).flatMap { self.slots[$0]?.change(change) }
        }

        mutating func remove(_ id: UInt64) -> Record? {
            guard let slot = self.slot(of: id) else { return nil }
            self.count -= 1
            let record = self.slots[slot].take()
            if self.count == 0 {
                // The last one: the table starts over, so that a scan costs the records, not the most ever tracked.
                self.slots.removeAll(keepingCapacity: true)
                self.free.removeAll(keepingCapacity: true)
            } else {
                self.free.append(slot)
            }
            return record
        }

        private func slot(of id: UInt64) -> Int? {
            let slot = Int(truncatingIfNeeded: id & 0xFFFF_FFFF)
            return slot < self.slots.count && self.slots[slot]?.id == id ? slot : nil
        }

        /// Whether `id` is an identity handed out so far.
        func handedOut(_ id: UInt64) -> Bool { id >> 32 != 0 && id >> 32 < self.nextOrder }

        /// The broken invariants of the slots: each record in its identity's slot, the free list the empty slots.
        var violations: [String] {
            let empty = self.slots.indices.filter { self.slots[$0] == nil }
            var violations = self.slots.indices.compactMap { slot in
                self.slots[slot].flatMap {
                    self.slot(of: $0.id) == slot ? nil : "tracked task \($0.id) is in slot \(slot)"
                }
            }
            violations.append(
                if: Set(self.free) != Set(empty) || self.free.count != empty.count,
                "the free slots \(self.free) are not the empty ones \(empty)")
            violations.append(
                if: self.count != self.slots.count - empty.count,
                "\(self.count) records counted in \(self.slots.count - empty.count) slots")
            return violations
        }
    }
}

extension TrackedTasks.Record {
    /// Runs `change` on the record, in place when called through optional chaining.
    fileprivate mutating func change<Result>(_ change: (inout Self) -> Result) -> Result { change(&self) }
}
