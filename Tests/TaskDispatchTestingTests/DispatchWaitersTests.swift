import Dispatch
import TaskDispatch
import Testing

@testable import TaskDispatchTesting

/// The waiting state on its own, driven directly: no dispatcher, no threads, no continuations.
@Suite struct DispatchWaitersTests {
    typealias Waiters = DispatchWaiters<String>

    @Test func startsEmptyAndHandsOutDistinctIdentities() {
        var waiters = Waiters()
        #expect(waiters.isEmpty)
        #expect(waiters.count == 0)
        let first = waiters.makeID()
        let second = waiters.makeID()
        #expect(first != second)
        #expect(waiters.isEmpty)  // an identity alone registers nothing
    }

    @Test func aDispatchThatMeetsNoConditionWakesNobody() {
        var waiters = Waiters()
        waiters.add(waiters.makeID(), waitingFor: .dueTask(.background), resumer: "step")

        #expect(waiters.dispatchHappened(.init(dueForeground: 1)).isEmpty)
        #expect(waiters.dispatchHappened(.init(delayedBackground: 3)).isEmpty)  // delayed is not due
        #expect(waiters.count == 1)
    }

    @Test func aDispatchThatMeetsAConditionRemovesAndReturnsItsWaiter() {
        var waiters = Waiters()
        waiters.add(waiters.makeID(), waitingFor: .dueTask(.background), resumer: "step")

        #expect(waiters.dispatchHappened(.init(dueBackground: 1)) == ["step"])
        #expect(waiters.isEmpty)
        #expect(waiters.dispatchHappened(.init(dueBackground: 2)).isEmpty)  // resumed once only
    }

    @Test func onlyTheWaitersWhoseConditionHoldsWakeOldestFirst() {
        var waiters = Waiters()
        waiters.add(waiters.makeID(), waitingFor: .dueTask(nil), resumer: "any")
        waiters.add(waiters.makeID(), waitingFor: .dueTask(.background), resumer: "background")
        waiters.add(waiters.makeID(), waitingFor: .dueTask(.foreground), resumer: "foreground")
        waiters.add(waiters.makeID(), waitingFor: .dueTask(.foreground), resumer: "foreground 2")

        #expect(waiters.dispatchHappened(.init(dueForeground: 1)) == ["any", "foreground", "foreground 2"])
        #expect(waiters.count == 1)
        #expect(waiters.dispatchHappened(.init(dueBackground: 1)) == ["background"])
    }

    @Test func pendingTaskConditionsCountDueAndDelayedTasksPerContext() {
        let condition = Waiters.Condition.pendingTasks(atLeast: 2, in: .background)
        #expect(!condition.isMet(by: .init(dueBackground: 1)))
        #expect(!condition.isMet(by: .init(dueForeground: 5, dueBackground: 1)))
        #expect(condition.isMet(by: .init(dueBackground: 1, delayedBackground: 1)))
        let either = Waiters.Condition.pendingTasks(atLeast: 3, in: nil)
        #expect(either.isMet(by: .init(dueForeground: 1, dueBackground: 1, delayedForeground: 1)))
        #expect(!either.isMet(by: .init(dueForeground: 1, delayedBackground: 1)))
        #expect(Waiters.Condition.pendingTasks(atLeast: 0, in: .foreground).isMet(by: .init()))
    }

    @Test func removingAWaiterReturnsItsResumerOnce() {
        var waiters = Waiters()
        let kept = waiters.makeID()
        let cancelled = waiters.makeID()
        waiters.add(kept, waitingFor: .dueTask(nil), resumer: "kept")
        waiters.add(cancelled, waitingFor: .dueTask(nil), resumer: "cancelled")

        #expect(waiters.remove(cancelled) == "cancelled")
        #expect(waiters.remove(cancelled) == nil)  // a timer or a dispatch that comes later finds nothing
        #expect(waiters.dispatchHappened(.init(dueBackground: 1)) == ["kept"])
        #expect(waiters.remove(kept) == nil)
    }

    @Test func aWaiterCanRegisterAgainUnderTheSameIdentityAfterItWasWoken() {
        var waiters = Waiters()
        let id = waiters.makeID()
        waiters.add(id, waitingFor: .dueTask(.background), resumer: "first wait")
        #expect(waiters.dispatchHappened(.init(dueBackground: 1)) == ["first wait"])

        waiters.add(id, waitingFor: .dueTask(.background), resumer: "second wait")  // another run took the task

        #expect(waiters.remove(id) == "second wait")
    }

    // MARK: - One timer for every wait

    @Test func onlyAWaiterWhoseDeadlineComesFirstSetsATimer() {
        var waiters = Waiters()
        let t = DispatchTime(uptimeNanoseconds: 1_000)
        #expect(waiters.add(waiters.makeID(), waitingFor: .dueTask(nil), resumer: "never") == nil)
        #expect(
            waiters.add(waiters.makeID(), waitingFor: .dueTask(nil), resumer: "a", deadline: t + .seconds(10)) == t
                + .seconds(10))
        // Later deadlines, the usual case: the pending timer fires first, so none is set.
        #expect(
            waiters.add(waiters.makeID(), waitingFor: .dueTask(nil), resumer: "b", deadline: t + .seconds(11)) == nil)
        #expect(
            waiters.add(waiters.makeID(), waitingFor: .dueTask(nil), resumer: "c", deadline: t + .seconds(10)) == nil)
        // An earlier one (a shorter per-call limit) sets its own.
        #expect(
            waiters.add(waiters.makeID(), waitingFor: .dueTask(nil), resumer: "d", deadline: t + .seconds(1)) == t
                + .seconds(1))
        #expect(waiters.timerDeadline == t + .seconds(1))
    }

    @Test func aTimerExpiresTheWaitersWhoseDeadlinePassedAndSetsTheNext() {
        var waiters = Waiters()
        let t = DispatchTime(uptimeNanoseconds: 1_000)
        waiters.add(waiters.makeID(), waitingFor: .dueTask(nil), resumer: "a", deadline: t + .seconds(10))
        waiters.add(waiters.makeID(), waitingFor: .dueTask(nil), resumer: "b", deadline: t + .seconds(20))
        waiters.add(waiters.makeID(), waitingFor: .dueTask(nil), resumer: "c", deadline: t + .seconds(10))
        waiters.add(waiters.makeID(), waitingFor: .dueTask(nil), resumer: "never")

        let first = waiters.timerFired(for: t + .seconds(10), now: t + .seconds(10))
        #expect(first.expired == ["a", "c"])
        #expect(first.next == t + .seconds(20))  // "b" still waits: the next timer is set for it
        let second = waiters.timerFired(for: t + .seconds(20), now: t + .seconds(20))
        #expect(second.expired == ["b"])
        #expect(second.next == nil)  // only a waiter without a deadline is left
        #expect(waiters.timerDeadline == nil)
        #expect(waiters.count == 1)
    }

    @Test func aTimerThatAnEarlierOneReplacedStillExpiresWhatItFindsDue() {
        var waiters = Waiters()
        let t = DispatchTime(uptimeNanoseconds: 1_000)
        let late = waiters.makeID()
        waiters.add(late, waitingFor: .dueTask(nil), resumer: "late", deadline: t + .seconds(10))
        waiters.add(waiters.makeID(), waitingFor: .dueTask(nil), resumer: "early", deadline: t + .seconds(1))
        // The early timer fires and sets one for the late waiter. (The late waiter's first timer is still pending:
        // whichever fires second finds nothing to do.)
        let early = waiters.timerFired(for: t + .seconds(1), now: t + .seconds(1))
        #expect(early.expired == ["early"])
        #expect(early.next == t + .seconds(10))
        // A waiter that a dispatch resumed leaves its deadline behind: the timer finds nothing and sets none.
        #expect(waiters.remove(late) == "late")
        let stale = waiters.timerFired(for: t + .seconds(10), now: t + .seconds(10))
        #expect(stale.expired.isEmpty)
        #expect(stale.next == nil)
    }
}
