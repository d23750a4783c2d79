import TaskDispatch
import Testing

@testable import TaskDispatchTesting

/// Auto-advance's rule for when the clock may move (`ClockHold`), driven through the engine with no threads: the
/// timer is a recorded call, fired by hand.
@Suite struct ClockHoldTests {
    /// A schedule in auto-advance with one delayed task at `seconds`, whose hold timers are recorded.
    private static func schedule(delayedBy seconds: Int64, timers: Locked<[UInt64]>) -> Schedule {
        var schedule = Schedule(order: .dispatch, mode: .autoAdvance, historyLimit: 0)
        schedule.clockHold.setTimer = { generation in timers.withLock { $0.append(generation) } }
        _ = schedule.accept(
            DispatchedTask(.background({}), label: "later", delay: .seconds(seconds), callSite: CallSite(line: 1)))
        return schedule
    }

    @Test func aJumpNobodyAllowedIsHeldWithOneTimerAHold() {
        let timers = Locked<[UInt64]>([])
        var schedule = Self.schedule(delayedBy: 5, timers: timers)
        let held1 = schedule.canAutoAdvance()
        #expect(!held1)
        let held2 = schedule.canAutoAdvance()
        #expect(!held2)  // the same hold: no second timer
        #expect(timers.withLock { $0 } == [1])
        schedule.clockHold.endHold()  // the test began to wait, say
        let held3 = schedule.canAutoAdvance()
        #expect(!held3)
        #expect(timers.withLock { $0 } == [1, 2])
        schedule.checkInvariants()
    }

    /// A delayed task the test dispatched, accepted as its call would accept it.
    private static func testsTask(_ schedule: inout Schedule, _ label: String, after seconds: Int64) -> ScheduledTask {
        let task = schedule.accept(
            DispatchedTask(.background({}), label: label, delay: .seconds(seconds), callSite: CallSite(line: 2)))
        schedule.clockHold.allowJumps(to: task)
        return task
    }

    @Test func theTestsDispatchAllowsJumpsUpToItsTaskWhileItIsPending() {
        let timers = Locked<[UInt64]>([])
        var schedule = Self.schedule(delayedBy: 5, timers: timers)
        _ = Self.testsTask(&schedule, "retry", after: 3)
        let allowed1 = schedule.canAutoAdvance()
        #expect(allowed1)  // to 3 s
        let ran = schedule.next(in: .any, jumpingClockTo: TaskKey.latestTime)
        #expect(ran?.run.task.label == "retry")
        let held1 = schedule.canAutoAdvance()
        #expect(!held1)  // 5 s is past what the test's call allowed, which has run
        schedule.checkInvariants()
    }

    @Test func aCancelledOrNeverDueTaskOfTheTestsAllowsNothing() {
        let timers = Locked<[UInt64]>([])
        var schedule = Self.schedule(delayedBy: 5, timers: timers)
        let timeout = Self.testsTask(&schedule, "timeout", after: 30)
        let allowed1 = schedule.canAutoAdvance()
        #expect(allowed1)  // 5 s is before the timeout
        _ = schedule.cancel(timeout)
        let held1 = schedule.canAutoAdvance()
        #expect(!held1)
        _ = Self.testsTask(&schedule, "forever", after: Int64.max)
        let held2 = schedule.canAutoAdvance()
        #expect(!held2)
        schedule.checkInvariants()
    }

    @Test func aStaleOrSatisfiedTimerReleasesNothing() {
        let timers = Locked<[UInt64]>([])
        var schedule = Self.schedule(delayedBy: 5, timers: timers)
        let held7 = schedule.canAutoAdvance()
        #expect(!held7)
        schedule.clockHold.endHold()
        let held8 = schedule.clockHoldTimerFired(for: 1)
        #expect(held8 == nil)  // its hold ended
        let held9 = schedule.canAutoAdvance()
        #expect(!held9)  // hold 2
        _ = Self.testsTask(&schedule, "later too", after: 5)
        let held10 = schedule.clockHoldTimerFired(for: 2)
        #expect(held10 == nil)  // the jump is allowed now: nothing is held
        #expect(schedule.clockHold.timedOut == 0)
    }

    @Test func aTimerThatFindsTheHoldStillThereReleasesJumpsForGood() {
        let timers = Locked<[UInt64]>([])
        var schedule = Self.schedule(delayedBy: 5, timers: timers)
        let held11 = schedule.canAutoAdvance()
        #expect(!held11)
        let allowed12 = schedule.clockHoldTimerFired(for: 1)
        #expect(allowed12 == 5_000_000_000)  // the clock moves to the task at 5 s
        #expect(schedule.clockHold.timedOut == 1)
        let allowed13 = schedule.canAutoAdvance()
        #expect(allowed13)
        let held14 = schedule.clockHoldTimerFired(for: 1)
        #expect(held14 == nil)  // once
        _ = schedule.accept(
            DispatchedTask(.background({}), label: "more", delay: .seconds(9), callSite: CallSite(line: 2)))
        let allowed15 = schedule.canAutoAdvance()
        #expect(allowed15)
        #expect(timers.withLock { $0 } == [1])
    }

    @Test func outsideAutoAdvanceNothingIsHeld() {
        let timers = Locked<[UInt64]>([])
        var schedule = Self.schedule(delayedBy: 5, timers: timers)
        schedule.mode = .autoDrain
        let held16 = schedule.canAutoAdvance()
        #expect(!held16)
        #expect(timers.withLock { $0 }.isEmpty)
    }

    /// The allowances say a task is pending exactly when one of theirs is, after any cancellations and runs,
    /// against a plain scan of the tasks (over 64 of them, so the list is compacted on the way).
    @Test(arguments: 0..<20)
    func theAllowancesArePendingWhileOneOfTheirTasksIs(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var schedule = Schedule(order: .dispatch, mode: .autoAdvance, historyLimit: 0)
        var hold = ClockHold()
        var tasks: [ScheduledTask] = []
        for step in 0..<300 {
            switch random.next() % 4 {
            case 0, 1:
                let task = schedule.accept(
                    DispatchedTask(
                        .background({}), label: "t\(step)", delay: .seconds(Int64(random.next() % 1_000) + 1),
                        callSite: CallSite(line: 3)))
                hold.allowJumps(to: task)
                tasks.append(task)
            case 2:
                if !tasks.isEmpty { _ = schedule.cancel(tasks[Int(random.next() % UInt64(tasks.count))]) }
            default:
                _ = schedule.next(in: .any, jumpingClockTo: schedule.now + Int64(random.next() % 50_000_000_000))
            }
            let expected = tasks.contains(where: \.isPending)
            let found = hold.hasPendingAllowance()
            #expect(found == expected, "seed \(seed), step \(step)")
        }
    }
}
