extension TrackedTasks {
    /// The records by identity, found without hashing: an identity's low 32 bits name the slot its record is in, and
    /// its high bits the order the tasks began in, so identities sort oldest first. A finished task's slot is reused:
    /// the slots grow with the tasks tracked at once, not with those ever tracked.
    struct Records: Sendable {
        private var slots: [Record?] = []
        /// Each slot's identity (0 when empty): finding a record reads no record, so copies none.
        private var slotIDs: [UInt64] = []
        /// The empty slots, the last emptied last.
        private var free: [Int] = []
        /// The high bits of the next identity handed out (they wrap after 2³² tasks on one dispatcher).
        private(set) var nextOrder: UInt64 = 1

        /// How many records there are (stored: every dispatch reads it).
        private(set) var count = 0
        /// How many records are unsettled by their own fields, and how many their fields leave undecided (see
        /// ``TrackedTasks/Record/standing``): kept as records change, so that with none undecided the unsettled
        /// count costs nothing to read.
        private(set) var unsettled = 0
        private(set) var undecided = 0

        var all: some Sequence<Record> { self.slots.lazy.compactMap { $0 } }

        /// The records' identities, in no particular order: read in place, without a copy of each record.
        var ids: some Sequence<UInt64> { self.slots.lazy.compactMap { $0?.id } }

        /// Stores the record `make` builds for its identity, and returns that identity.
        mutating func insert(_ make: (UInt64) -> Record) -> UInt64 {
            let slot = self.free.popLast() ?? self.slots.count
            let id = self.nextOrder &<< 32 | UInt64(slot)
            self.nextOrder &+= 1
            let record = make(id)
            self.tally(record.standing, by: 1)
            if slot == self.slots.count {
                self.slots.append(consume record)
                self.slotIDs.append(id)
            } else {
                self.slots[slot] = consume record
                self.slotIDs[slot] = id
            }
            self.count += 1
            return id
        }

        subscript(id: UInt64) -> Record? { self.slot(of: id).flatMap { self.slots[$0] } }

        /// Changes record `id` in place (no copy of it), if it exists, and returns what `change` returns.
        @discardableResult
        @inline(__always)
        mutating func update<Result>(_ id: UInt64, _ change: (inout Record) -> Result) -> Result? {
            guard let slot = self.slot(of: id),
                let (result, before, after) = self.slots[slot]?.change({ record in
                    let before = record.standing
                    return (change(&record), before, record.standing)
                })
            else { return nil }
            if before != after {
                self.tally(before, by: -1)
                self.tally(after, by: 1)
            }
            return result
        }

        /// Removes record `id`, if it exists, and returns its key: the record is destroyed in place, never copied.
        mutating func remove(_ id: UInt64) -> TrackedTaskKey? {
            guard let slot = self.slot(of: id),
                let (standing, key) = self.slots[slot]?.change({ ($0.standing, $0.key) })
            else { return nil }
            self.tally(standing, by: -1)
            self.slots[slot] = nil
            self.slotIDs[slot] = 0
            self.count -= 1
            if self.count == 0 {
                // The last one: the table starts over, so that a scan costs the records, not the most ever tracked.
                self.slots.removeAll(keepingCapacity: true)
                self.slotIDs.removeAll(keepingCapacity: true)
                self.free.removeAll(keepingCapacity: true)
            } else {
                self.free.append(slot)
            }
            return key
        }

        private mutating func tally(_ standing: TrackedTasks.Standing, by change: Int) {
            switch standing {
            case .settled: break
            case .unsettled: self.unsettled += change
            case .undecided: self.undecided += change
            }
        }

        private func slot(of id: UInt64) -> Int? {
            let slot = Int(truncatingIfNeeded: id & 0xFFFF_FFFF)
            return slot < self.slotIDs.count && self.slotIDs[slot] == id ? slot : nil
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
                if: self.slotIDs != self.slots.map { $0?.id ?? 0 }, "the slots' identities \(self.slotIDs) are stale")
            violations.append(
                if: Set(self.free) != Set(empty) || self.free.count != empty.count,
                "the free slots \(self.free) are not the empty ones \(empty)")
            violations.append(
                if: self.count != self.slots.count - empty.count,
                "\(self.count) records counted in \(self.slots.count - empty.count) slots")
            let standings = self.all.map(\.standing)
            let unsettled = standings.filter { $0 == .unsettled }.count
            let undecided = standings.filter { $0 == .undecided }.count
            violations.append(
                if: (unsettled, undecided) != (self.unsettled, self.undecided),
                "the records count \(self.unsettled) unsettled and \(self.undecided) undecided, but \(unsettled) and \(undecided) are"
            )
            return violations
        }
    }
}

extension TrackedTasks.Record {
    /// Runs `change` on the record, in place when called through optional chaining.
    fileprivate mutating func change<Result>(_ change: (inout Self) -> Result) -> Result { change(&self) }

    /// Whether the record's own fields settle the task (see ``TrackedTasks/isSettled(_:)``), or leave it to
    /// its task's cancellation flag (a start not yet parked at its gate, whose handler reports a cancellation once it
    /// is) or to the tracked tasks it awaits.
    @inline(__always)
    var standing: TrackedTasks.Standing {
        switch self.phase {
        case .failed: .settled
        case .startCancelled: .unsettled
        case .waitingToStart: self.isParked ? .settled : .undecided
        case .running:
            self.runningJobs > 0
                ? .unsettled : self.ownedWaits > 0 ? .settled : self.awaiting.isEmpty ? .unsettled : .undecided
        }
    }
}
