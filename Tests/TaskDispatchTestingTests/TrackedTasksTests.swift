import TaskDispatch
import Testing

@testable import TaskDispatchTesting

private struct Failure: Error {}

/// The tracked-task records driven directly: which tasks count as settled as their waits begin and end.
@Suite struct TrackedTasksTests {
    private static let site = CallSite(fileID: "App/Model.swift", line: 7)

    @Test func aTaskIsSettledUntilItsStartRunsAndWhileItWaitsOnTheDispatcher() {
        var tracked = TrackedTasks()
        let id = tracked.begin(label: "load", callSite: Self.site)
        #expect(tracked.unsettledCount == 0)  // its start is pending on the dispatcher
        tracked.markStarted(id, at: 0)
        #expect(tracked.unsettledCount == 1)
        tracked.ownedWaitBegan(id, on: "runInBackground \"parse\"")
        #expect(tracked.unsettledCount == 0)
        tracked.ownedWaitEnded(id, on: "runInBackground \"parse\"")
        #expect(tracked.unsettledCount == 1)
        #expect(tracked.unsettled.map(\.lastSeen) == ["it resumed after runInBackground \"parse\""])
        tracked.finish(id, error: nil)
        #expect(tracked.unsettledCount == 0)
        #expect(tracked.unfinishedCount == 0)
    }

    /// The dispatcher records a wait as it accepts the awaited task, so this order does not happen through it;
    /// the records still read it as a running task, never as a settled one.
    @Test func aWaitEndedBeforeItBeganNeverReadsAsSettled() {
        var tracked = TrackedTasks()
        let id = tracked.begin(label: nil, callSite: Self.site)
        tracked.markStarted(id, at: 0)
        tracked.ownedWaitEnded(id, on: "a")
        tracked.ownedWaitBegan(id, on: "a")
        #expect(tracked.unsettledCount == 1)
    }

    @Test func aFailedTaskIsSettledAndItsErrorIsHandedOutOnce() {
        var tracked = TrackedTasks()
        let id = tracked.begin(label: "sync", callSite: Self.site)
        tracked.markStarted(id, at: 0)
        tracked.finish(id, error: Failure())
        #expect(tracked.unsettledCount == 0)
        #expect(tracked.takeUnobserved().map(\.label) == ["sync"])
        #expect(tracked.takeUnobserved().isEmpty)
        #expect(tracked.unsettledCount == 0)
    }

    @Test func aTaskAwaitingAnotherSettlesWithItUntilTheOtherFinishes() {
        var tracked = TrackedTasks()
        let inner = tracked.begin(label: "inner", callSite: Self.site)
        let outer = tracked.begin(label: "outer", callSite: Self.site)
        tracked.register(AnyHashable(inner), id: inner)
        tracked.markStarted(inner, at: 0)
        tracked.markStarted(outer, at: 0)
        tracked.setAwaiting(outer, inner)
        #expect(tracked.unsettledCount == 2)  // both run: the inner one has not waited on anything yet
        tracked.ownedWaitBegan(inner, on: "a sleep")
        #expect(tracked.unsettledCount == 0)  // the inner one sleeps on the clock, and the outer one awaits it
        tracked.ownedWaitEnded(inner, on: "a sleep")
        tracked.finish(inner, error: nil)
        // The inner one has finished, so the outer one is about to resume: not settled.
        #expect(tracked.unsettledCount == 1)
        #expect(tracked.unsettled.first?.awaiting == "a tracked task that has finished (its value is on its way)")
        tracked.setAwaiting(outer, nil)
        tracked.finish(outer, error: nil)
        #expect(tracked.unsettledCount == 0)
    }

    @Test func aTaskCancelledBeforeItsStartIsForgottenWithoutCounting() {
        var tracked = TrackedTasks()
        let id = tracked.begin(label: nil, callSite: Self.site)
        tracked.finish(id, error: CancellationError())
        #expect(tracked.unsettledCount == 0)
        #expect(tracked.unfinishedCount == 0)
        #expect(tracked.takeUnobserved().isEmpty)
    }
}
