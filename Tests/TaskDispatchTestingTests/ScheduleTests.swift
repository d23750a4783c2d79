import TaskDispatch
import Testing

@testable import TaskDispatchTesting

/// The engine driven directly: no lock, no threads, no dispatcher around it.
@Suite struct ScheduleTests {
    private static func task(
        _ label: String,
        _ context: TaskContext = .background,
        after delay: Duration = .zero,
        priority: BackgroundPriority = .medium,
        line: UInt = #line
    ) -> DispatchedTask {
        let work: DispatchedTask.Work = context == .foreground ? .foreground({}) : .background({})
        return DispatchedTask(work, label: label, delay: delay, priority: priority, callSite: CallSite(line: line))
    }

    private static func drainLabels(
        _ schedule: inout Schedule,
        scope: Schedule.Scope = .any,
        clock: Int64? = nil
    ) -> [String] {
        var labels: [String] = []
        while let step = schedule.next(in: scope, jumpingClockTo: clock) {
            labels.append(step.run.task.label ?? "-")
        }
        return labels
    }

    @Test func dueTasksRunByDueTimeThenDispatchOrderAcrossContexts() {
        var schedule = Schedule(order: .dispatch, historyLimit: 10)
        _ = schedule.accept(Self.task("late", after: .seconds(2)))
        _ = schedule.accept(Self.task("early", .foreground, after: .seconds(1)))
        _ = schedule.accept(Self.task("now-bg"))
        _ = schedule.accept(Self.task("now-fg", .foreground))
        _ = schedule.accept(Self.task("tie", after: .seconds(1)))
        #expect(schedule.pendingCount == 5)
        #expect(Self.drainLabels(&schedule, clock: TaskKey.latestTime) == ["now-bg", "now-fg", "early", "tie", "late"])
        #expect(schedule.now == 2_000_000_000)
        #expect(schedule.pendingCount == 0)
        #expect(schedule.history.count == 5)
    }

    @Test func theClockMovesOnlyAsFarAsItIsAllowed() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        _ = schedule.accept(Self.task("a", after: .seconds(1)))
        _ = schedule.accept(Self.task("b", after: .seconds(3)))
        #expect(Self.drainLabels(&schedule) == [])  // no clock limit: nothing is due
        #expect(Self.drainLabels(&schedule, clock: 2_000_000_000) == ["a"])
        #expect(schedule.now == 1_000_000_000)
        schedule.moveClock(to: 2_000_000_000)
        #expect(schedule.now == 2_000_000_000)
        #expect(schedule.pendingCount(in: .background) == 1)
        schedule.moveClock(to: 0)  // never backwards
        #expect(schedule.now == 2_000_000_000)
    }

    @Test func cancellingHandsOutTheClosureAndUpdatesTheCounts() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        let due = schedule.accept(Self.task("due", .foreground))
        let waiting = schedule.accept(Self.task("waiting", after: .seconds(1)))
        let released = schedule.cancel(due)
        #expect(released != nil)
        #expect(due.work == nil && due.state == .cancelled)
        let again = schedule.cancel(due)
        #expect(again == nil)  // once only
        let releasedWaiting = schedule.cancel(waiting)
        #expect(releasedWaiting != nil)
        #expect(schedule.pendingCount == 0)
        #expect(schedule.staleEntries == 2)
        #expect(Self.drainLabels(&schedule, clock: TaskKey.latestTime) == [])
        // The heap dropped its cancelled task while looking for the next due time; the foreground queue is not
        // searched while nothing in it is due, so its reference waits for a compaction.
        #expect(schedule.staleEntries == 1)
        schedule.compact()
        #expect(schedule.staleEntries == 0)
        #expect(schedule.foreground.isEmpty)
        #expect(schedule.now == 0)  // a cancelled task never moves the clock
    }

    @Test func aStartedTaskCannotBeCancelled() throws {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        let task = schedule.accept(Self.task("x"))
        let next = schedule.next(in: .any, jumpingClockTo: nil)
        let step = try #require(next)
        #expect(step.run.task === task)
        let released = schedule.cancel(task)
        #expect(released == nil)
        #expect(task.state == .started)
    }

    @Test func cancelledReferencesNeverOutgrowThePendingWorkByMuch() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        _ = schedule.accept(Self.task("far future", after: .seconds(1_000_000)))
        for index in 0..<100_000 {
            let context: TaskContext = index.isMultiple(of: 2) ? .foreground : .background
            let task = schedule.accept(
                Self.task("churn", context, after: index.isMultiple(of: 3) ? .seconds(5) : .zero))
            _ = schedule.cancel(task)
            #expect(schedule.staleEntries <= schedule.pendingCount + 1_024)
        }
        let held = schedule.foreground.count + schedule.background.reduce(0) { $0 + $1.count } + schedule.delayed.count
        #expect(held <= schedule.pendingCount + 1_025)
        #expect(schedule.pendingCount == 1)
    }

    @Test func priorityOrderRunsTheHighestPriorityFirstAndKeepsTheForegroundInDispatchOrder() {
        var schedule = Schedule(order: .priority, historyLimit: 0)
        _ = schedule.accept(Self.task("low", priority: .background))
        _ = schedule.accept(Self.task("fg", .foreground))
        _ = schedule.accept(Self.task("high", priority: .userInteractive))
        _ = schedule.accept(Self.task("mid", priority: .medium))
        #expect(Self.drainLabels(&schedule, scope: .background) == ["high", "mid", "low"])
        #expect(Self.drainLabels(&schedule) == ["fg"])
    }

    @Test func switchingTheOrderKeepsEveryDueTask() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        let labels = (0..<20).map { "t\($0)" }
        for (index, label) in labels.enumerated() {
            let task = schedule.accept(Self.task(label, priority: index.isMultiple(of: 2) ? .utility : .userInitiated))
            if index == 7 { _ = schedule.cancel(task) }
        }
        schedule.setOrder(.random(seed: 3))
        schedule.setOrder(.priority)
        let ran = Self.drainLabels(&schedule)
        #expect(ran.count == 19)
        #expect(Set(ran) == Set(labels).subtracting(["t7"]))
        #expect(ran.prefix(9).allSatisfy { Int($0.dropFirst()).map { !$0.isMultiple(of: 2) } == true })
    }

    @Test func randomOrderReplaysForTheSameSeedAndStepsInConstantTime() {
        func order(seed: UInt64) -> [String] {
            var schedule = Schedule(order: .random(seed: seed), historyLimit: 0)
            for index in 0..<50 { _ = schedule.accept(Self.task("b\(index)")) }
            for index in 0..<5 { _ = schedule.accept(Self.task("f\(index)", .foreground)) }
            return Self.drainLabels(&schedule)
        }
        let first = order(seed: 42)
        #expect(first == order(seed: 42))
        #expect(first != order(seed: 43))
        #expect(first.filter { $0.hasPrefix("f") } == ["f0", "f1", "f2", "f3", "f4"])  // the main queue is serial
        // 100,000 due tasks under random order: linear overall, so this finishes at once.
        var large = Schedule(order: .random(seed: 1), historyLimit: 0)
        for _ in 0..<100_000 { _ = large.accept(Self.task("x")) }
        #expect(Self.drainLabels(&large).count == 100_000)
    }

    @Test func runCurrentDrawsOnlyAmongTheTasksDueWhenItStarted() {
        var schedule = Schedule(order: .random(seed: 9), historyLimit: 0)
        for index in 0..<10 { _ = schedule.accept(Self.task("old\(index)")) }
        let limit = schedule.markCurrent()
        var ran: [String] = []
        while let step = schedule.next(in: .any, jumpingClockTo: nil, before: limit) {
            ran.append(step.run.task.label ?? "-")
            _ = schedule.accept(Self.task("new"))  // dispatched by the running task
        }
        #expect(ran.count == 10)
        #expect(ran.allSatisfy { $0.hasPrefix("old") })
        #expect(schedule.pendingCount == 10)
    }

    @Test func theClaimRefusesReentryAndMakesOtherThreadsWait() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        let first = schedule.claim("runUntilIdle()", thread: 1, onMainActor: false)
        guard case .claimed = first else {
            Issue.record("the first claim must succeed")
            return
        }
        guard case .mustWait = schedule.claim("runNext()", thread: 2, onMainActor: false) else {
            Issue.record("another thread must wait")
            return
        }
        guard case .refused(let reentrant) = schedule.claim("runNext()", thread: 1, onMainActor: false),
            case .reentrantRun = reentrant.misuse
        else {
            Issue.record("the same thread must be refused")
            return
        }
        guard case .refused(let concurrent) = schedule.claim("runNext()", thread: 3, onMainActor: true),
            case .concurrentRun = concurrent.misuse
        else {
            Issue.record("the main actor must be refused rather than wait")
            return
        }
        let drains = schedule.release()
        #expect(!drains)
        #expect(schedule.claim == nil)
    }

    @Test func aSnapshotListsTheEarliestFiftyInKeyOrder() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        for index in (0..<200).reversed() {
            _ = schedule.accept(Self.task("d\(index)", after: .seconds(Int64(index) + 1)))
        }
        for index in 0..<30 { _ = schedule.accept(Self.task("f\(index)", .foreground)) }
        let snapshot = schedule.snapshot()
        #expect(snapshot.pendingCount == 230)
        #expect(snapshot.pending.count == Snapshot.listingLimit)
        #expect(snapshot.pending.map { $0.label ?? "" } == (0..<30).map { "f\($0)" } + (0..<20).map { "d\($0)" })
    }

    @Test func callSitesAreStoredOncePerSite() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        for _ in 0..<1_000 { _ = schedule.accept(Self.task("loop")) }
        _ = schedule.accept(Self.task("elsewhere"))
        #expect(schedule.callSites.sites.count == 2)
    }
}
