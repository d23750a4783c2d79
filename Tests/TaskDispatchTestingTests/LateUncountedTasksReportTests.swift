import TaskDispatch
import Testing

@testable import TaskDispatchTesting

/// A tracked task that finished with uncounted tasks after the clock moved leaves its report for the dispatcher's next
/// call (TestingAsyncCode, "Child tasks"): each report reaches one call, beside other failures left so, and a wait of
/// the test's ends to throw it rather than stall behind the auto-advance it stops. The engine's events are driven by
/// hand where the order is otherwise a race.
@Suite(.timeLimit(.minutes(1))) struct LateUncountedTasksReportTests {
    /// Leaves in `dispatcher` the report of tracked task `label`, whose child's wait was uncounted, finished at 1 s.
    static func leaveALateReport(in dispatcher: ManualDispatcher, label: String) {
        let violations = dispatcher.storage.update { schedule in
            let id = schedule.tracked.begin(
                label: label, callSite: CallSite(fileID: "Feed/Feed.swift", line: 12),
                childJobs: .uncountedInIsolatedTask)
            schedule.tracked.markStarted(id, at: schedule.now)
            schedule.tracked.ownedWaitBegan(id, on: "a child's sleep", byAnotherTask: true)
            schedule.now += 1_000_000_000
            schedule.trackedTaskFinished(id, error: nil)
            return schedule.invariantViolations()
        }
        #expect(violations.isEmpty)
    }

    @Test func aTrackedTaskStartedAfterNowBreaksAnInvariant() {
        let dispatcher = ManualDispatcher()
        let (id, violations) = dispatcher.storage.update { schedule in
            let id = schedule.tracked.begin(
                label: "news", callSite: CallSite(fileID: "Feed/Feed.swift", line: 12), childJobs: .counted)
            schedule.tracked.markStarted(id, at: 2_000_000_000)
            schedule.now = 1_000_000_000
            return (id, schedule.invariantViolations())
        }
        #expect(violations == ["tracked task \(id) started at 2000000000, after now (1000000000)"])
    }

    @Test func eachReportReachesOneCallInTheOrderTheTasksFinished() throws {
        let dispatcher = ManualDispatcher()
        Self.leaveALateReport(in: dispatcher, label: "news")
        Self.leaveALateReport(in: dispatcher, label: "weather")
        let first = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(first.kind == .unsettledTasks(after: .zero))
        #expect(first.summary.hasPrefix("verifyIdle() cannot know whether every child task of tracked task \"news\""))
        let second = try #require(throws: ManualDispatcherError.self) { try dispatcher.runUntilIdle() }
        #expect(
            second.summary.hasPrefix("runUntilIdle() cannot know whether every child task of tracked task \"weather\""))
        try dispatcher.verifyIdle()
    }

    /// A runaway auto-drain, found after a late report, is left beside it: the next calls throw both, oldest first.
    @Test func aRunawayAutoDrainKeepsAReportLeftBeforeIt() throws {
        let dispatcher = ManualDispatcher(runawayLimit: 10)
        Self.leaveALateReport(in: dispatcher, label: "news")
        @Sendable func spin() { dispatcher.background(label: "spin") { spin() } }
        spin()
        dispatcher.mode = .autoDrain  // stops after runawayLimit tasks, reports on standard error
        dispatcher.mode = .manual
        let first = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(first.kind == .unsettledTasks(after: .zero))
        let second = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(second.kind == .runawayTasks(limit: 10))
        dispatcher.cancelAllPendingTasks()
        try dispatcher.verifyIdle()
    }

    @Test func aWaitForPendingTasksThrowsAReportLeftForIt() async throws {
        let dispatcher = ManualDispatcher()
        Self.leaveALateReport(in: dispatcher, label: "news")
        let error = try await #require(throws: ManualDispatcherError.self) {
            try await dispatcher.waitForPendingTasks(1)
        }
        #expect(error.summary.hasPrefix("waitForPendingTasks(1) cannot know whether every child task of"))
        try dispatcher.verifyIdle()
    }

    /// In auto-advance a report left for the next call stops the clock: the test's `value(of:)` of a plain `Task` that
    /// sleeps on the clock throws the report at once, rather than wait out its limit for a jump that cannot come.
    @Test func theValueOfAPlainTaskThrowsAReportThatStopsAutoAdvance() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance, waitLimit: .seconds(60))
        Self.leaveALateReport(in: dispatcher, label: "news")
        let plain = Task { try await dispatcher.clock.sleep(for: .seconds(1)) }
        let error = try await #require(throws: ManualDispatcherError.self) { try await dispatcher.value(of: plain) }
        #expect(error.kind == .unsettledTasks(after: .zero))
        #expect(error.summary.hasPrefix("value(of:) cannot know whether every child task of tracked task \"news\""))
        // With the report taken, auto-advance moves on, and the sleep ends.
        try await dispatcher.value(of: plain)
        try dispatcher.verifyIdle()
    }

    /// A tracked task still running at the dispatcher's release, which finishes after the clock moved, reaches the
    /// registry's check after the release.
    @Test func aReportLeftAfterTheReleaseReachesTheRegistrysCheck() async {
        let registry = ManualDispatcherRegistry()
        var storage: Storage?
        var id: UInt64 = 0
        do {
            let dispatcher: ManualDispatcher = registry.track { ManualDispatcher() }
            storage = dispatcher.storage
            dispatcher.storage.update { schedule in
                id = schedule.tracked.begin(
                    label: "dashboard", callSite: CallSite(fileID: "Feed/Feed.swift", line: 12),
                    childJobs: .uncountedInIsolatedTask)
                schedule.tracked.markStarted(id, at: 0)
                schedule.tracked.ownedWaitBegan(id, on: "a child's sleep", byAnotherTask: true)
                schedule.now = 1_000_000_000
            }
        }
        storage?.update { $0.trackedTaskFinished(id, error: nil) }
        let failures = await registry.idleFailuresOnceCancelledTasksEnd()
        #expect(failures.count == 1)
        #expect(
            failures.first?.description.contains(
                "The check after the dispatcher's release cannot know whether every child task of tracked task \"dashboard\""
            ) == true, "\(failures)")
    }

    /// A main-actor task's `async let` children are uncounted (a drain that catches them waiting throws): created after
    /// the task's own sleep, they may finish with it inside the advance, and the report comes all the same, in every
    /// run.
    @MainActor @Test func mainActorChildrenCreatedAfterTheMoveAreReportedToo() async throws {
        for run in 0..<10 {
            let dispatcher = ManualDispatcher()
            let task = dispatcher.startTask(label: "dashboard") { @MainActor in
                try await dispatcher.clock.sleep(for: .seconds(1))
                async let news = dispatcher.runInBackground(label: "news") { "news" }
                async let weather = dispatcher.runInBackground(label: "weather") { "weather" }
                return try await [news, weather]
            }
            let error = await #expect(throws: ManualDispatcherError.self, "run \(run)") {
                try await dispatcher.advance(by: .seconds(1))
                _ = try await dispatcher.value(of: task)
                try dispatcher.verifyIdle()
            }
            #expect(error?.kind == .unsettledTasks(after: .zero), "run \(run)")
            #expect(error?.summary.contains("while this one runs on the main actor") == true, "run \(run)")
            task.cancel()
            _ = try? await dispatcher.value(of: task)
            _ = try? await dispatcher.runUntilIdle()
        }
    }
}
