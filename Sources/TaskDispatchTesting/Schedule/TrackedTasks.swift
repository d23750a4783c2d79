import TaskDispatch

/// The Swift tasks a ``ManualDispatcher`` started with `startTask`, from their start until they finish, and the
/// errors they threw that nobody claimed.
///
/// Kept in the ``Schedule`` under the dispatcher's lock, and touched only by `startTask`, the tasks themselves as
/// they start and finish, `value(of:)` and the checks of the run methods: never by a plain dispatch or a step.
///
/// `@unchecked Sendable`: the only non-`Sendable` stored type is `AnyHashable`, and every key it wraps is a
/// `Task` (`register(_:id:)` and `claim(_:)` are called with tasks only), which is `Sendable`; the value is
/// mutated only under the dispatcher's monitor.
struct TrackedTasks: @unchecked Sendable {
    /// Where a tracked task stands.
    enum Phase: Sendable {
        /// Its start is a pending task on the dispatcher.
        case waitingToStart
        /// Its operation has begun and not yet returned.
        case running
        /// It threw an error that nobody has claimed yet.
        case failed
    }

    struct Record {
        let label: String?
        let callSite: CallSite
        var phase: Phase
        /// Whether `value(of:)` awaits it, so its error reaches the test.
        var claimed = false
        /// The task, as the key `value(of:)` finds it by; `nil` until `startTask` registers it.
        var key: AnyHashable?
    }

    /// An error a tracked task threw that nobody claimed.
    struct UnobservedError: Sendable {
        let label: String?
        let callSite: CallSite
        let error: String
    }

    private(set) var nextID: UInt64 = 1
    /// Tasks that have not finished, and failed ones whose error is unclaimed.
    private(set) var records: [UInt64: Record] = [:]
    private var ids: [AnyHashable: UInt64] = [:]
    /// Failed tasks whose error nobody claimed, oldest first.
    private(set) var unobserved: [UInt64] = []
    private var errors: [UInt64: String] = [:]

    /// The number of tracked tasks that have not finished.
    var unfinishedCount: Int {
        self.records.count - self.unobserved.count
    }

    mutating func begin(label: String?, callSite: CallSite) -> UInt64 {
        let id = self.nextID
        self.nextID += 1
        self.records[id] = Record(label: label, callSite: callSite, phase: .waitingToStart)
        return id
    }

    /// Notes the task `key` as tracked task `id`, unless it has already finished cleanly.
    mutating func register(_ key: AnyHashable, id: UInt64) {
        guard self.records[id] != nil else { return }
        self.records[id]?.key = key
        self.ids[key] = id
    }

    mutating func markRunning(_ id: UInt64) {
        self.records[id]?.phase = .running
    }

    /// Ends tracking of `id`; keeps a thrown error (other than cancellation) for the next check, unless claimed.
    mutating func finish(_ id: UInt64, error: (any Error)?) {
        guard let record = self.records[id] else { return }
        if let error, !(error is CancellationError), !record.claimed {
            self.records[id]?.phase = .failed
            self.unobserved.append(id)
            self.errors[id] = String(describing: error)
            return
        }
        self.forget(id)
    }

    /// Claims the error of the task `key`, if it throws one: the test awaits it.
    mutating func claim(_ key: AnyHashable) {
        guard let id = self.ids[key], let record = self.records[id] else { return }
        if record.phase == .failed {
            self.unobserved.removeAll { $0 == id }
            self.forget(id)
        } else {
            self.records[id]?.claimed = true
        }
    }

    /// Hands out the unclaimed errors, oldest first, and forgets them.
    mutating func takeUnobserved() -> [UnobservedError] {
        let taken = self.unobserved.compactMap { id -> UnobservedError? in
            guard let record = self.records[id] else { return nil }
            return UnobservedError(label: record.label, callSite: record.callSite, error: self.errors[id] ?? "")
        }
        for id in self.unobserved { self.forget(id) }
        self.unobserved = []
        return taken
    }

    private mutating func forget(_ id: UInt64) {
        if let key = self.records.removeValue(forKey: id)?.key { self.ids.removeValue(forKey: key) }
        self.errors.removeValue(forKey: id)
    }
}

extension Schedule {
    /// The failure reporting every unclaimed error of a tracked task, which it hands out once; `nil` if none.
    mutating func unobservedErrorsFailure(method: String) -> Failure? {
        guard !self.tracked.unobserved.isEmpty else { return nil }
        return self.failure(.unobservedTaskErrors(method: method, errors: self.tracked.takeUnobserved()))
    }
}
