extension TrackedTasks {
    /// Every invariant of the records that does not hold now, as messages with the values; O(n log n). Not checked:
    /// `ownedWaits >= 0` (the records alone allow a wait to end before it begins; `TrackedTasksTests` drives it).
    func invariantViolations() -> [String] {
        var violations = self.records.violations
        let failed = Set(self.records.all.filter { $0.phase == .failed }.map(\.id))
        let unindexed = Set(self.unindexed)
        for record in self.records.all {
            let id = record.id
            violations.append(
                if: (record.phase == .failed) != (record.error != nil),
                "tracked task \(id) is \(record.phase) but \(record.error == nil ? "has no" : "keeps an") error")
            violations.append(
                if: !self.records.handedOut(id),
                "tracked task \(id) lies outside the identities handed out (orders 1..<\(self.records.nextOrder))")
            violations.append(if: record.awaiting.contains(id), "tracked task \(id) awaits its own value")
            violations.append(
                if: record.uncountedTasks != .unseen && record.childJobs == .counted,
                "tracked task \(id) counts its child tasks' jobs but saw uncounted tasks wait")
            violations.append(
                if: record.runningJobs < 0, "tracked task \(id) counts \(record.runningJobs) running jobs")
            violations.append(
                if: record.failedAfterDrains > self.drainsEnded,
                "tracked task \(id) failed after \(record.failedAfterDrains) drains, of \(self.drainsEnded) so far")
            violations.append(
                if: record.uncountedTasks == .seen && record.phase == .running && !self.uncountedTasksSeen,
                "tracked task \(id) saw uncounted tasks wait, unreported, but the flag that leads to it is off")
            violations.append(if: record.claims < 0, "tracked task \(id) counts \(record.claims) claims of its error")
            if let key = record.key, self.keys[key] == nil, !unindexed.contains(id) {
                violations.append("tracked task \(id) is registered but neither indexed nor listed to be")
            }
        }
        let keyed = self.records.all.compactMap(\.key)
        violations.append(if: Set(keyed).count != keyed.count, "two tracked tasks share a key")
        violations.append(
            if: unindexed.count != self.unindexed.count
                || self.unindexed.contains(where: { !self.records.handedOut($0) }),
            "the tasks to index, \(self.unindexed), repeat one or lie outside the identities handed out")
        violations.append(
            if: Set(self.unobserved) != failed || self.unobserved.count != failed.count,
            "the unobserved errors \(self.unobserved) are not exactly the failed records \(failed.sorted())")
        for (key, id) in self.keys where self.records[id]?.key != key {
            violations.append("keys maps a task to tracked task \(id), which has another key or none")
        }
        return violations
    }
}
