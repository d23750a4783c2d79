public import TaskDispatch

/// Collects every ``ManualDispatcher`` created while a scope runs, so a test can check at its end that each one
/// is idle, including dispatchers that the code under test created itself.
///
/// Tracking is scoped by a task-local value, so tests that run in parallel never see each other's dispatchers;
/// scopes nest, and a dispatcher registers with the innermost one. The registry holds dispatchers weakly, and one
/// released with work left hands its report over as it goes, so a dispatcher that dies with the test's scope is
/// still reported. In Swift Testing, the `.verifiesIdleDispatchers` trait does all this. In XCTest, run
/// `super.invokeTest()` inside ``track(_:)``, and in `tearDown() async throws` fail once for each of
/// ``idleFailuresOnceCancelledTasksEnd()`` at its ``IdleFailure/createdAt``
/// (<doc:ManualDispatcherReference#In-XCTest>).
public final class ManualDispatcherRegistry: Sendable {
    /// The registry that dispatchers created in the current task register with.
    @TaskLocal static var current: ManualDispatcherRegistry?

    /// The registrations of the dispatchers, in creation order; their ``Registration``s write to it.
    fileprivate let entries = LockedValue(Entries())

    /// Whether whoever checks this registry records every failure it finds (the `.verifiesIdleDispatchers` trait):
    /// a dispatcher released with work left then reports to the registry only, not to standard error as well.
    let recordsEveryFailure: Bool

    /// Creates an empty registry; it tracks nothing until ``track(_:)`` runs code with it.
    public init() {
        self.recordsEveryFailure = false
    }

    /// Creates an empty registry; see ``recordsEveryFailure``. For the idle trait.
    package init(recordsEveryFailure: Bool) {
        self.recordsEveryFailure = recordsEveryFailure
    }

    /// Runs `body`, registering with this registry every ``ManualDispatcher`` created inside it.
    ///
    /// Dispatchers created by code that `body` calls synchronously register too.
    ///
    /// - Parameter body: The code to track.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func track<Result>(_ body: () throws -> Result) rethrows -> Result {
        try Self.$current.withValue(self, operation: body)
    }

    /// Runs `body`, registering with this registry every ``ManualDispatcher`` created inside it, in its child
    /// tasks, and in the `Task { }`s it creates (not in `Task.detached`, which inherits no task-local value).
    ///
    /// - Parameters:
    ///   - isolation: The actor `body` runs on; leave the default.
    ///   - body: The code to track.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func track<Result>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> Result
    ) async rethrows -> Result {
        try await Self.$current.withValue(self, operation: body, isolation: isolation)
    }

    /// How many dispatchers registered with this registry so far.
    public var createdCount: Int {
        self.entries.withLock { $0.createdCount }
    }

    /// One failure for each registered dispatcher that holds work: still alive with pending tasks (or an unreported
    /// runaway auto-drain), checked with ``ManualDispatcher/verifyIdle()``, or released with work left. In creation
    /// order.
    ///
    /// - Returns: The failures, empty when every dispatcher is idle.
    /// - Complexity: O(n) in the number of registered dispatchers, plus their pending tasks.
    public func idleFailures() -> [IdleFailure] {
        self.registered().compactMap { $0.idleFailure() }
    }

    /// ``idleFailures()``, once the tracked tasks that were cancelled have ended (within each dispatcher's
    /// ``ManualDispatcher/waitLimit``, the dispatchers waited for at once): the end-of-test check of the `.verifiesIdleDispatchers` trait, and of an
    /// XCTest `tearDown() async throws`.
    ///
    /// A loop that a model's release cancelled as the test went away ends on its own thread; checked at once, it would
    /// pass or fail by the luck of the threads. One that does not end within the limit is reported as running. A
    /// cancelled caller does not wait.
    ///
    /// - Returns: The failures, in creation order.
    nonisolated(nonsending) public func idleFailuresOnceCancelledTasksEnd() async -> [IdleFailure] {
        await self.idleFailuresOnceCancelledTasksEnd(besides: nil)
    }

    /// ``idleFailuresOnceCancelledTasksEnd()``, less the dispatchers whose leftover work `reported`, the error the
    /// tracked code threw, already listed: the work is reported once. The trait's last check: the registry takes no
    /// release report after it (a dispatcher that outlives the test writes its report to standard error).
    package func idleFailuresOnceCancelledTasksEnd(besides reported: (any Error)?) async -> [IdleFailure] {
        let registrations = self.registered().map(\.registration)
        // All at once, so that the check takes at most the longest wait limit (a cancelled caller's children return at
        // once); a dispatcher released meanwhile is awaited through the schedule its release kept.
        let storages = self.registered(registrations).compactMap { $0.dispatcher?.storage ?? $0.release?.trackedTasks }
        await withTaskGroup(of: Void.self) { group in
            for storage in storages {
                group.addTask { await storage.awaitCancelledTrackedTasks(within: storage.waitLimit) }
            }
        }
        let reported = reported as? ManualDispatcherError
        return self.registered(registrations, closing: true).compactMap { $0.idleFailure(besides: reported) }
    }

    /// Throws the first of ``idleFailures()``, if any; in an XCTest `tearDown`, prefer one failure for each at its
    /// ``IdleFailure/createdAt``.
    ///
    /// - Throws: ``IdleFailure`` for the first dispatcher, in creation order, that holds work.
    public func verifyIdle() throws(IdleFailure) {
        if let failure = self.idleFailures().first { throw failure }
    }

    /// The entries of `registrations` (all those held, by default), each with its dispatcher if it is alive; read in
    /// one section, so that an entry shows its dispatcher alive or its release recorded. `closing` takes no release
    /// report after it.
    private func registered(_ registrations: [Registration]? = nil, closing: Bool = false) -> [Entry] {
        self.entries.withLock { entries in
            if closing { entries.isClosed = true }
            return (registrations ?? entries.registrations).map {
                Entry(registration: $0, dispatcher: $0.dispatcher, release: $0.release)
            }
        }
    }
}

extension ManualDispatcherRegistry {
    /// A registered dispatcher that still holds work, and where it was created.
    ///
    /// ```
    /// ManualDispatcher created at FeedTests/FeedTests.swift:12 still holds work at the end of the tracked scope:
    /// ManualDispatcher: expected no pending tasks, but 1 task never ran. …
    /// ```
    public struct IdleFailure: Error, Sendable, CustomStringConvertible {
        /// Where the dispatcher was created.
        public let createdAt: CallSite

        /// Whether the dispatcher was released before the check, with work left: pending tasks, unfinished tracked
        /// tasks, or an error a tracked task threw that nobody claimed.
        public let wasReleased: Bool

        /// The creation site, then the dispatcher's full `verifyIdle()` error text (or, for a released
        /// dispatcher, its release report).
        public let description: String
    }

    /// A dispatcher's entry in the registry it registered with, which it tells of its creation and its release.
    ///
    /// `@unchecked Sendable`: ``dispatcher`` and ``release`` are read and written only under the registry's lock.
    final class Registration: @unchecked Sendable {
        let createdAt: CallSite
        /// A number no other registration in the process has (an error names its dispatcher's by it).
        let id: UInt64
        private static let lastID = LockedValue<UInt64>(0)
        private weak let registry: ManualDispatcherRegistry?
        /// The dispatcher, held weakly.
        fileprivate weak var dispatcher: ManualDispatcher?
        /// Once the dispatcher is released, what it left.
        fileprivate var release: Release?

        init(createdAt: CallSite, registry: ManualDispatcherRegistry) {
            self.createdAt = createdAt
            self.id = Self.lastID.withLock { id in
                id += 1
                return id
            }
            self.registry = registry
        }

        /// Registers the dispatcher, weakly, in creation order; called once, at the end of its `init`.
        func attach(_ dispatcher: ManualDispatcher) {
            self.registry?.entries.withLock { $0.add(self, dispatcher) }
        }

        /// Records what the dispatcher left at its release, to look at when the check comes. Returns `nil` when no
        /// check is to come (the registry is gone, or its last check ran), else whether the check reports the release
        /// itself (the idle trait's), so that the dispatcher need not write it to standard error too.
        func dispatcherReleased(_ release: Release) -> Bool? {
            guard let registry = self.registry else { return nil }
            return registry.entries.withLock { entries in
                guard !entries.isClosed else { return nil }
                self.release = release
                return registry.recordsEveryFailure
            }
        }
    }

    /// What a dispatcher left at its release: its report (`nil` when idle), what the report lists when an error the
    /// test threw can have listed all of it (`nil` when it reports more), and the storage of the tracked tasks it left
    /// running.
    struct Release: Sendable {
        var report: String?
        var listed: Leftover?
        var trackedTasks: Storage?
    }

    /// Work a dispatcher leaves that one error can list in full: its pending tasks (the first 50, and their count),
    /// with the tracked tasks that wait on them, and the awaits it cancelled at their bound.
    struct Leftover: Sendable {
        var pending: [ManualDispatcher.PendingTask] = []
        var pendingCount = 0
        var cancelledAwaits: [String] = []
    }

    /// One registration as read under the registry's lock: its dispatcher if alive, and what it left at its release.
    struct Entry {
        let registration: Registration
        let dispatcher: ManualDispatcher?
        let release: Release?

        /// The entry's failure, unless it is idle or its leftover is what `reported`, an error the test threw, already
        /// listed.
        func idleFailure(besides reported: ManualDispatcherError? = nil) -> IdleFailure? {
            let createdAt = self.registration.createdAt
            // Another dispatcher's error never lists this one's work, however alike the listings read.
            let reported = reported?.registration == self.registration.id ? reported : nil
            // What the tracked tasks left running at the release did since: still running, or threw unclaimed.
            let leftRunning = self.release?.trackedTasks?.update { $0.failureAfterRelease() }
            if let reported, let listed = self.release?.listed {
                switch leftRunning?.misuse {
                case nil: if reported.lists(listed) { return nil }
                case .unfinishedTasks(let tasks)?: if reported.lists(listed, unfinished: tasks) { return nil }
                default: break
                }
            }
            let report = self.release?.report
            if report != nil || leftRunning != nil {
                let running = leftRunning.map {
                    "ManualDispatcher was released while tracked tasks were still running: \(ManualDispatcherError($0).summary)\n"
                }
                let description =
                    "ManualDispatcher created at \(createdAt) was released with work left before the end of the tracked scope: \(report ?? "")\(running ?? "")"
                return IdleFailure(createdAt: createdAt, wasReleased: true, description: description)
            }
            guard let dispatcher = self.dispatcher, var failure = dispatcher.idleCheck() else { return nil }
            if let reported, case .awaitsCancelled(_, let whats, _) = failure.misuse, whats == [reported.cancelledAwait]
            {
                // The check took the await the test threw about: what else is left.
                guard let next = dispatcher.idleCheck() else { return nil }
                failure = next
            }
            let error = ManualDispatcherError(failure)
            if let reported, reported.reportsTheSameLeftover(as: error, misuse: failure.misuse) { return nil }
            let description =
                "ManualDispatcher created at \(createdAt) still holds work at the end of the tracked scope: \(error)"
            return IdleFailure(createdAt: createdAt, wasReleased: false, description: description)
        }
    }

    /// The registrations of one registry, in creation order. Those of dispatchers released idle are dropped as they
    /// grow, so a scope that creates many dispatchers holds memory in proportion to the ones that matter.
    struct Entries: Sendable {
        private(set) var registrations: [Registration] = []
        private(set) var createdCount = 0
        private var compactionThreshold = 64
        /// Whether the last check ran: a release is reported on standard error from then on.
        var isClosed = false

        mutating func add(_ registration: Registration, _ dispatcher: ManualDispatcher) {
            if self.registrations.count >= self.compactionThreshold {
                // Drops the entries whose dispatcher is gone and left nothing to report.
                self.registrations.removeAll { $0.release.map { $0.report == nil && $0.trackedTasks == nil } ?? false }
                self.compactionThreshold = Swift.max(64, self.registrations.count * 2)
            }
            registration.dispatcher = dispatcher
            self.registrations.append(registration)
            self.createdCount += 1
        }
    }
}

extension ManualDispatcherError {
    /// Whether this error listed all of `leftover` and the tracked tasks left `unfinished`, and they hold something:
    /// exactly its pending tasks (the first 50, and their count), if any, the one await it cancelled, if any, and each
    /// unfinished task as it stands now (cancelled or not, last seen, awaiting), unless it waits only on those pending
    /// tasks. A task that went on only through work the dispatcher does not see stands as it did: it counts as listed.
    fileprivate func lists(
        _ leftover: ManualDispatcherRegistry.Leftover, unfinished: [TrackedTasks.UnsettledTask] = []
    ) -> Bool {
        (leftover.pendingCount > 0 || !leftover.cancelledAwaits.isEmpty || !unfinished.isEmpty)
            && (leftover.pendingCount == 0
                || (self.pendingTaskCount == leftover.pendingCount && self.pendingTasks == leftover.pending))
            && (leftover.cancelledAwaits.isEmpty || leftover.cancelledAwaits == [self.cancelledAwait])
            && unfinished.allSatisfy {
                (leftover.pendingCount > 0 && $0.isSettled) || self.listedTrackedTasks[$0.id] == $0.standing
            }
    }

    /// Whether this error, thrown by the test, already reported what `check` (of `misuse`), the dispatcher's
    /// `verifyIdle()` error at the end of the test, reports: the same error, or the same pending tasks and tracked
    /// tasks (see ``lists(_:unfinished:)``).
    fileprivate func reportsTheSameLeftover(as check: ManualDispatcherError, misuse: Failure.Misuse) -> Bool {
        if self.description == check.description { return true }
        switch misuse {
        case .pendingTasks(let unfinished):
            return self.lists(
                .init(pending: check.pendingTasks, pendingCount: check.pendingTaskCount), unfinished: unfinished)
        case .unfinishedTasks(let unfinished):
            return self.lists(.init(), unfinished: unfinished)
        default:
            return false
        }
    }
}
