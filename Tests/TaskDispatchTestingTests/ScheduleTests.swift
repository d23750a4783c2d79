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
        clock: Int64? = nil,
        checkingInvariantsEvery interval: Int = 1
    ) -> [String] {
        var labels: [String] = []
        while let step = schedule.next(in: scope, jumpingClockTo: clock) {
            labels.append(step.run.task.label ?? "-")
            if labels.count.isMultiple(of: interval) { schedule.checkInvariants() }
        }
        schedule.checkInvariants()
        return labels
    }

    /// What a wait checks at its registration and at its time-out: a condition that came to hold as the timer fired
    /// ends the wait instead of an error that contradicts itself ("for 1 pending task, but 1 is pending"), and an
    /// untracked task's end recorded after the timer removed the waiter counts, once.
    @Test func aWaitsConditionHoldsWhenItComesToHoldBeforeTheTimeOutIsRead() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        let id = schedule.waiters.makeID()
        let pendingBefore = schedule.holds(.pendingTasks(atLeast: 1, in: nil), for: id)
        _ = schedule.accept(Self.task("arrives"))
        let pendingAfter = schedule.holds(.pendingTasks(atLeast: 1, in: nil), for: id)
        let foregroundAfter = schedule.holds(.pendingTasks(atLeast: 1, in: .foreground), for: id)
        #expect(!pendingBefore && pendingAfter && !foregroundAfter)
        let endedBefore = schedule.holds(.untrackedTaskEnded, for: id)
        _ = schedule.handle(.untrackedTaskEnded(id), thread: 0)  // no waiter registered: recorded for it
        let ended = schedule.holds(.untrackedTaskEnded, for: id)
        let endedAgain = schedule.holds(.untrackedTaskEnded, for: id)  // taken
        #expect(!endedBefore && ended && !endedAgain)
    }

    @Test func dueTasksRunByDueTimeThenDispatchOrderAcrossContexts() {
        var schedule = Schedule(order: .dispatch, historyLimit: 10)
        _ = schedule.accept(Self.task("late", after: .seconds(2)))
        schedule.checkInvariants()
        _ = schedule.accept(Self.task("early", .foreground, after: .seconds(1)))
        schedule.checkInvariants()
        _ = schedule.accept(Self.task("now-bg"))
        schedule.checkInvariants()
        _ = schedule.accept(Self.task("now-fg", .foreground))
        schedule.checkInvariants()
        _ = schedule.accept(Self.task("tie", after: .seconds(1)))
        schedule.checkInvariants()
        #expect(schedule.pendingCount == 5)
        #expect(Self.drainLabels(&schedule, clock: TaskKey.latestTime) == ["now-bg", "now-fg", "early", "tie", "late"])
        #expect(schedule.now == 2_000_000_000)
        #expect(schedule.pendingCount == 0)
        #expect(schedule.history.count == 5)
    }

    @Test func theClockMovesOnlyAsFarAsItIsAllowed() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        _ = schedule.accept(Self.task("a", after: .seconds(1)))
        schedule.checkInvariants()
        _ = schedule.accept(Self.task("b", after: .seconds(3)))
        schedule.checkInvariants()
        #expect(Self.drainLabels(&schedule) == [])  // no clock limit: nothing is due
        #expect(Self.drainLabels(&schedule, clock: 2_000_000_000) == ["a"])
        #expect(schedule.now == 1_000_000_000)
        schedule.moveClock(to: 2_000_000_000)
        schedule.checkInvariants()
        #expect(schedule.now == 2_000_000_000)
        #expect(schedule.pendingCount(in: .background) == 1)
        schedule.moveClock(to: 0)  // never backwards
        schedule.checkInvariants()
        #expect(schedule.now == 2_000_000_000)
    }

    @Test func cancellingHandsOutTheClosureAndUpdatesTheCounts() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        let due = schedule.accept(Self.task("due", .foreground))
        schedule.checkInvariants()
        let waiting = schedule.accept(Self.task("waiting", after: .seconds(1)))
        schedule.checkInvariants()
        let released = schedule.cancel(due)
        schedule.checkInvariants()
        #expect(released != nil)
        #expect(due.work == nil && due.state == .cancelled)
        let again = schedule.cancel(due)
        schedule.checkInvariants()
        #expect(again == nil)  // once only
        let releasedWaiting = schedule.cancel(waiting)
        schedule.checkInvariants()
        #expect(releasedWaiting != nil)
        #expect(schedule.pendingCount == 0)
        #expect(schedule.staleEntries == 2)
        #expect(Self.drainLabels(&schedule, clock: TaskKey.latestTime) == [])
        // The heap dropped its cancelled task while looking for the next due time; the foreground queue is not
        // searched while nothing in it is due, so its reference waits for a compaction.
        #expect(schedule.staleEntries == 1)
        schedule.compact()
        schedule.checkInvariants()
        #expect(schedule.staleEntries == 0)
        #expect(schedule.foreground.isEmpty)
        #expect(schedule.now == 0)  // a cancelled task never moves the clock
    }

    @Test func aStartedTaskCannotBeCancelled() throws {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        let task = schedule.accept(Self.task("x"))
        schedule.checkInvariants()
        let next = schedule.next(in: .any, jumpingClockTo: nil)
        schedule.checkInvariants()
        let step = try #require(next)
        #expect(step.run.task === task)
        let released = schedule.cancel(task)
        schedule.checkInvariants()
        #expect(released == nil)
        #expect(task.state == .started)
    }

    @Test func cancelledReferencesNeverOutgrowThePendingWorkByMuch() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        _ = schedule.accept(Self.task("far future", after: .seconds(1_000_000)))
        schedule.checkInvariants()
        for index in 0..<100_000 {
            let context: TaskContext = index.isMultiple(of: 2) ? .foreground : .background
            let task = schedule.accept(
                Self.task("churn", context, after: index.isMultiple(of: 3) ? .seconds(5) : .zero))
            _ = schedule.cancel(task)
            // Every operation would make this loop quadratic: a prime interval lands on every phase of the churn.
            if index.isMultiple(of: 997) { schedule.checkInvariants() }
            #expect(schedule.staleEntries <= schedule.pendingCount + 1_024)
        }
        let held = schedule.foreground.count + schedule.background.reduce(0) { $0 + $1.count } + schedule.delayed.count
        #expect(held <= schedule.pendingCount + 1_025)
        #expect(schedule.pendingCount == 1)
    }

    @Test func priorityOrderRunsTheHighestPriorityFirstAndKeepsTheForegroundInDispatchOrder() {
        var schedule = Schedule(order: .priority, historyLimit: 0)
        _ = schedule.accept(Self.task("low", priority: .background))
        schedule.checkInvariants()
        _ = schedule.accept(Self.task("fg", .foreground))
        schedule.checkInvariants()
        _ = schedule.accept(Self.task("high", priority: .userInteractive))
        schedule.checkInvariants()
        _ = schedule.accept(Self.task("mid", priority: .medium))
        schedule.checkInvariants()
        #expect(Self.drainLabels(&schedule, scope: .background) == ["high", "mid", "low"])
        #expect(Self.drainLabels(&schedule) == ["fg"])
    }

    @Test func switchingTheOrderKeepsEveryDueTask() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        let labels = (0..<20).map { "t\($0)" }
        for (index, label) in labels.enumerated() {
            let task = schedule.accept(Self.task(label, priority: index.isMultiple(of: 2) ? .utility : .userInitiated))
            schedule.checkInvariants()
            if index == 7 {
                _ = schedule.cancel(task)
                schedule.checkInvariants()
            }
        }
        schedule.setOrder(.random(seed: 3))
        schedule.checkInvariants()
        schedule.setOrder(.priority)
        schedule.checkInvariants()
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
            schedule.checkInvariants()
            return Self.drainLabels(&schedule)
        }
        let first = order(seed: 42)
        #expect(first == order(seed: 42))
        #expect(first != order(seed: 43))
        #expect(first.filter { $0.hasPrefix("f") } == ["f0", "f1", "f2", "f3", "f4"])  // the main queue is serial
        // 100,000 due tasks under random order: linear overall, so this finishes at once.
        var large = Schedule(order: .random(seed: 1), historyLimit: 0)
        for _ in 0..<100_000 { _ = large.accept(Self.task("x")) }
        large.checkInvariants()
        #expect(Self.drainLabels(&large, checkingInvariantsEvery: 10_000).count == 100_000)
    }

    @Test func runCurrentDrawsOnlyAmongTheTasksDueWhenItStarted() {
        var schedule = Schedule(order: .random(seed: 9), historyLimit: 0)
        for index in 0..<10 { _ = schedule.accept(Self.task("old\(index)")) }
        let limit = schedule.markCurrent()
        schedule.checkInvariants()
        var ran: [String] = []
        while let step = schedule.next(in: .any, jumpingClockTo: nil, before: limit) {
            ran.append(step.run.task.label ?? "-")
            schedule.checkInvariants()
            _ = schedule.accept(Self.task("new"))  // dispatched by the running task
            schedule.checkInvariants()
        }
        #expect(ran.count == 10)
        #expect(ran.allSatisfy { $0.hasPrefix("old") })
        #expect(schedule.pendingCount == 10)
    }

    @Test func theClaimRefusesReentryAndMakesOtherThreadsWait() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        let first = schedule.claim("runUntilIdle()", thread: 1, blocksMainActor: false)
        schedule.checkInvariants()
        guard case .claimed = first else {
            Issue.record("the first claim must succeed")
            return
        }
        guard case .mustWait = schedule.claim("runNext()", thread: 2, blocksMainActor: false) else {
            Issue.record("another thread must wait")
            return
        }
        guard case .refused(let reentrant) = schedule.claim("runNext()", thread: 1, blocksMainActor: false),
            case .reentrantRun = reentrant.misuse
        else {
            Issue.record("the same thread must be refused")
            return
        }
        guard case .refused(let concurrent) = schedule.claim("runNext()", thread: 3, blocksMainActor: true),
            case .concurrentRun = concurrent.misuse
        else {
            Issue.record("the main actor must be refused rather than wait")
            return
        }
        guard case .mustWait = schedule.claim("runNext()", thread: 3, blocksMainActor: false) else {
            Issue.record("an async caller on the main actor must wait: it suspends rather than blocks")
            return
        }
        guard
            case .refused(let reentrantAsync) = schedule.claim(
                "runNext()", thread: 1, blocksMainActor: false),
            case .reentrantRun = reentrantAsync.misuse
        else {
            Issue.record("an async caller on the thread that holds the claim must be refused")
            return
        }
        #expect(!DispatchWaiters<WaitResumer>.Condition.runReleased.isMet(by: schedule.waitCounts))
        let drains = schedule.release()
        schedule.checkInvariants()
        #expect(!drains)
        #expect(schedule.claim == nil)
        #expect(DispatchWaiters<WaitResumer>.Condition.runReleased.isMet(by: schedule.waitCounts))
    }

    @Test func aSnapshotListsTheEarliestFiftyInKeyOrder() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        for index in (0..<200).reversed() {
            _ = schedule.accept(Self.task("d\(index)", after: .seconds(Int64(index) + 1)))
            schedule.checkInvariants()
        }
        for index in 0..<30 { _ = schedule.accept(Self.task("f\(index)", .foreground)) }
        schedule.checkInvariants()
        let snapshot = schedule.snapshot()
        #expect(snapshot.pendingCount == 230)
        #expect(snapshot.pending.count == Snapshot.listingLimit)
        #expect(snapshot.pending.map { $0.label ?? "" } == (0..<30).map { "f\($0)" } + (0..<20).map { "d\($0)" })
    }

    @Test func callSitesAreStoredOncePerSite() {
        var schedule = Schedule(order: .dispatch, historyLimit: 0)
        for _ in 0..<1_000 { _ = schedule.accept(Self.task("loop")) }
        _ = schedule.accept(Self.task("elsewhere"))
        schedule.checkInvariants()
        #expect(schedule.callSites.sites.count == 2)
    }

    // MARK: - The invariant check can fail

    @Test func theInvariantCheckNamesWhatIsBrokenAndTheValues() {
        var schedule = Schedule(order: .priority, historyLimit: 1)
        let due = schedule.accept(Self.task("due", priority: .userInitiated))
        _ = schedule.accept(Self.task("later", .foreground, after: .seconds(1)))
        #expect(schedule.invariantViolations().isEmpty)

        var miscounted = schedule
        miscounted.dueForeground = 2
        #expect(
            miscounted.invariantViolations() == ["dueForeground is 2, but the queues and the heap hold 0 such entries"])

        var early = schedule
        early.now = 2_000_000_000  // the delayed task should have been promoted
        #expect(
            early.invariantViolations()
                == ["delayed task #2 is due at 1000000000, not after now (2000000000)"]
        )

        var beyond = schedule
        beyond.now = TaskKey.never
        #expect(
            beyond.invariantViolations().first
                == "now (\(Int64.max)) must lie in 0...TaskKey.latestTime (\(Int64.max - 1))")

        due.state = .started  // started, yet still in its due queue, and its closure kept
        let violations = schedule.invariantViolations()
        due.state = .due
        #expect(violations.contains("background queue 3 holds task #1 in state started"))
        #expect(violations.contains("dueBackground is 1, but the queues and the heap hold 0 such entries"))
    }

    // Exit tests exist on macOS, Linux and Windows only (not on iOS, tvOS, watchOS or visionOS).
    #if compiler(>=6.2) && (os(macOS) || os(Linux) || os(Windows))
        @Test func aBrokenInvariantStopsTheProcessWithItsName() async throws {
            let result = try #require(
                await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                    var schedule = Schedule(order: .dispatch, historyLimit: 0)
                    schedule.waitingBackground = 3
                    schedule.checkInvariants()
                }
            )
            let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(
                standardError.contains(
                    "Schedule invariant broken: waitingBackground is 3, but the queues and the heap hold 0 such entries"
                ),
                "standard error was: \(standardError)"
            )
        }
    #endif
}
