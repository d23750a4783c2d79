import Dispatch
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
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)  // its start is pending on the dispatcher
        tracked.markStarted(id, at: 0)
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 1)
        tracked.ownedWaitBegan(id, on: "runInBackground \"parse\"")
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)
        tracked.ownedWaitEnded(id, on: "runInBackground \"parse\"")
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 1)
        #expect(tracked.unsettled.map(\.lastSeen) == ["it resumed after runInBackground \"parse\""])
        tracked.finish(id, error: nil, now: 0)
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)
        #expect(tracked.unfinishedCount == 0)
    }

    /// A finished task's slot goes to the next task started: the finished task's identity still reads as finished,
    /// and a late event of it changes nothing; identities still sort in the order the tasks began.
    @Test func aFinishedTasksIdentityStaysFinishedWhenItsSlotIsReused() {
        var tracked = TrackedTasks()
        let first = tracked.begin(label: "first", callSite: Self.site)
        tracked.markStarted(first, at: 0)
        tracked.finish(first, error: nil, now: 0)
        let second = tracked.begin(label: "second", callSite: Self.site)
        tracked.markStarted(second, at: 0)
        tracked.checkInvariants()
        #expect(second > first)
        #expect(tracked.hasFinished(first) && !tracked.hasFinished(second))
        #expect(tracked.isSettled(first) && !tracked.isSettled(second))
        tracked.ownedWaitBegan(first, on: "a sleep")  // late: the task has finished
        tracked.checkInvariants()
        #expect(tracked.name(first) == "a tracked task that has finished")
        #expect(tracked.unsettled.map(\.label) == ["second"])
        #expect(tracked.unsettledCount == 1)
    }

    /// When the last record goes, the slots start over: scans cost the tasks tracked now, not the most ever tracked at
    /// once (a scan read every slot, empty or not, at 600 instructions a slot).
    @Test func theRecordsStartOverWhenTheLastTrackedTaskFinishes() {
        var tracked = TrackedTasks()
        let ids = ["a", "b", "c"].map { tracked.begin(label: $0, callSite: Self.site) }
        for id in ids {
            tracked.markStarted(id, at: 0)
            tracked.finish(id, error: nil, now: 0)
        }
        let next = tracked.begin(label: "d", callSite: Self.site)
        tracked.markStarted(next, at: 0)
        tracked.checkInvariants()
        #expect(next & 0xFFFF_FFFF == 0)  // the first slot of a fresh table, not the last one freed (2)
        #expect(ids.allSatisfy { tracked.hasFinished($0) } && !tracked.hasFinished(next))
        #expect(tracked.unsettled.map(\.label) == ["d"])
    }

    /// A wait of another task inside a task whose child jobs are not counted (a main-actor task's `async let`
    /// child) leaves the records unable to tell whether the task has settled: the first drain that relies on them is
    /// told, once; a wait of the task itself, or of a counted task's child, tells nothing new.
    @Test func anUncountedChildsWaitIsHandedOutOnce() throws {
        var tracked = TrackedTasks()
        let counted = tracked.begin(label: "counted", callSite: Self.site)
        let main = tracked.begin(
            label: "main", callSite: Self.site, onMainActor: true, childJobs: .uncountedInIsolatedTask)
        tracked.markStarted(counted, at: 0)
        tracked.markStarted(main, at: 0)
        tracked.ownedWaitBegan(counted, on: "a", byAnotherTask: true)
        tracked.ownedWaitBegan(main, on: "b")
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)
        let beforeTheChild = tracked.takeTaskWithUncountedTasks()
        #expect(beforeTheChild == nil)
        tracked.ownedWaitBegan(main, on: "c", byAnotherTask: true)
        tracked.checkInvariants()
        let taken = tracked.takeTaskWithUncountedTasks()
        let found = try #require(taken)
        #expect(found.name == "tracked task \"main\" (App/Model.swift:7)")
        #expect(found.isolation == .mainActor)
        let again = tracked.takeTaskWithUncountedTasks()
        #expect(again == nil)
        tracked.checkInvariants()
    }

    /// In a counted task, a wait from a task off its executor (one that prefers another, or none) is the task's own if
    /// it is the tracked task (its registered key), and otherwise an uncounted task's, handed out once, named by why.
    @Test(arguments: [
        (
            TrackedTasks.ChildJobs.uncountedUnderAnotherExecutor,
            TrackedTasks.TaskWithUncountedTasks.Isolation.underAnotherExecutor
        ),
        (.uncountedInUnstructuredTask, .inUnstructuredTask),
    ])
    func aWaitOffTheExecutorIsUncountedUnlessTheTasksOwn(
        childJobs: TrackedTasks.ChildJobs, isolation: TrackedTasks.TaskWithUncountedTasks.Isolation
    ) throws {
        var tracked = TrackedTasks()
        let id = tracked.begin(label: "dashboard", callSite: Self.site)
        let task = Task<Void, Never> {}
        let key = TrackedTaskKey(task)
        tracked.register(key, id: id)
        tracked.markStarted(id, at: 0)
        tracked.ownedWaitBegan(id, on: "own sleep", offTheExecutor: .init(address: key.address, childJobs: childJobs))
        tracked.checkInvariants()
        #expect(tracked.takeTaskWithUncountedTasks() == nil)
        tracked.ownedWaitBegan(
            id, on: "child's sleep", offTheExecutor: .init(address: key.address &+ 64, childJobs: childJobs))
        tracked.checkInvariants()
        let taken = tracked.takeTaskWithUncountedTasks()
        let found = try #require(taken)
        #expect(found.isolation == isolation)
        #expect(tracked.takeTaskWithUncountedTasks() == nil)
    }

    /// A task that finishes with its uncounted tasks unreported hands them out as it finishes, once, if the clock
    /// moved after its start (it may have passed such a task before its first wait); otherwise nothing.
    @Test(arguments: [(Int64(5), true), (Int64(0), false)])
    func aFinishAfterTheClockMovedHandsOutItsUncountedTasks(now: Int64, handedOut: Bool) {
        var tracked = TrackedTasks()
        let id = tracked.begin(label: "dashboard", callSite: Self.site, childJobs: .uncountedInIsolatedTask)
        tracked.markStarted(id, at: 0)
        tracked.ownedWaitBegan(id, on: "child's sleep", byAnotherTask: true)
        tracked.checkInvariants()
        let late = tracked.finish(id, error: nil, now: now)
        tracked.checkInvariants()
        #expect((late != nil) == handedOut)
        #expect(late.map { $0.finishedAfterTheClockMoved && $0.name.hasPrefix("tracked task \"dashboard\"") } ?? true)
        #expect(tracked.takeTaskWithUncountedTasks() == nil)
    }

    /// A child's `value(of:)` of another tracked task counts as its wait, too.
    @Test func anUncountedChildsValueAwaitIsHandedOutOnce() {
        var tracked = TrackedTasks()
        let awaited = tracked.begin(label: "awaited", callSite: Self.site)
        let actor = tracked.begin(label: "actor", callSite: Self.site, childJobs: .uncountedInIsolatedTask)
        tracked.markStarted(actor, at: 0)
        tracked.beginAwaiting(actor, awaited, byAnotherTask: true)
        tracked.checkInvariants()
        let taken = tracked.takeTaskWithUncountedTasks()
        #expect(taken?.isolation == .actor)
    }

    /// The dispatcher records a wait as it accepts the awaited task, so this order does not happen through it;
    /// the records still read it as a running task, never as a settled one.
    @Test func aWaitEndedBeforeItBeganNeverReadsAsSettled() {
        var tracked = TrackedTasks()
        let id = tracked.begin(label: nil, callSite: Self.site)
        tracked.checkInvariants()
        tracked.markStarted(id, at: 0)
        tracked.checkInvariants()
        tracked.ownedWaitEnded(id, on: "a")
        tracked.checkInvariants()
        tracked.ownedWaitBegan(id, on: "a")
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 1)
    }

    /// Each `value(of:)` call that awaits a task claims its error; one that gives up (timed out, cancelled) gives
    /// its claim back, and the error is still seen while another call awaits the task.
    @Test func anErrorStaysClaimedWhileAnyAwaitHoldsAClaim() {
        var tracked = TrackedTasks()
        let task = Task<Void, Never> {}
        let key = TrackedTaskKey(task)
        let id = tracked.begin(label: "download", callSite: Self.site)
        tracked.register(key, id: id)
        tracked.markStarted(id, at: 0)
        tracked.claim(key)  // two callers await it
        tracked.claim(key)
        tracked.unclaim(key)  // one of them is cancelled
        tracked.checkInvariants()
        tracked.finish(id, error: Failure(), now: 0)
        tracked.checkInvariants()
        #expect(tracked.takeUnobserved().isEmpty)  // the other one gets the error

        let alone = tracked.begin(label: "alone", callSite: Self.site)
        let other = Task<Void, Never> {}
        tracked.register(TrackedTaskKey(other), id: alone)
        tracked.claim(TrackedTaskKey(other))
        tracked.unclaim(TrackedTaskKey(other))  // its only caller gave up
        tracked.unclaim(TrackedTaskKey(other))  // a second give-back changes nothing
        tracked.finish(alone, error: Failure(), now: 0)
        tracked.checkInvariants()
        #expect(tracked.takeUnobserved().map(\.label) == ["alone"])
    }

    /// An async drain reports only the errors an earlier drain saw: those thrown since the last drain ended are the
    /// next call's to report, whether the drain began before or after they were thrown.
    @Test func anAsyncDrainLeavesTheErrorsItSeesToTheNextCall() {
        var tracked = TrackedTasks()
        let first = tracked.begin(label: "first", callSite: Self.site)
        tracked.markStarted(first, at: 0)
        tracked.finish(first, error: Failure(), now: 0)
        tracked.checkInvariants()
        #expect(tracked.takeUnobserved(.seenByAnEarlierDrain).isEmpty)  // no drain has ended since
        #expect(tracked.takeUnobserved(.none).isEmpty)
        tracked.drainEnded()
        let second = tracked.begin(label: "second", callSite: Self.site)
        tracked.markStarted(second, at: 0)
        tracked.finish(second, error: Failure(), now: 0)
        tracked.checkInvariants()
        #expect(tracked.takeUnobserved(.seenByAnEarlierDrain).map(\.label) == ["first"])
        tracked.checkInvariants()
        #expect(tracked.takeUnobserved().map(\.label) == ["second"])  // a step or verifyIdle(): every one
        tracked.checkInvariants()
    }

    @Test func aFailedTaskIsSettledAndItsErrorIsHandedOutOnce() {
        var tracked = TrackedTasks()
        let id = tracked.begin(label: "sync", callSite: Self.site)
        tracked.checkInvariants()
        tracked.markStarted(id, at: 0)
        tracked.checkInvariants()
        tracked.finish(id, error: Failure(), now: 0)
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)
        #expect(tracked.takeUnobserved().map(\.label) == ["sync"])
        tracked.checkInvariants()
        #expect(tracked.takeUnobserved().isEmpty)
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)
    }

    @Test func aTaskAwaitingAnotherSettlesWithItUntilTheOtherFinishes() {
        var tracked = TrackedTasks()
        let inner = tracked.begin(label: "inner", callSite: Self.site)
        tracked.checkInvariants()
        let outer = tracked.begin(label: "outer", callSite: Self.site)
        tracked.checkInvariants()
        tracked.register(TrackedTaskKey(Task<Void, Never> {}), id: inner)
        tracked.checkInvariants()
        tracked.markStarted(inner, at: 0)
        tracked.checkInvariants()
        tracked.markStarted(outer, at: 0)
        tracked.checkInvariants()
        tracked.beginAwaiting(outer, inner)
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 2)  // both run: the inner one has not waited on anything yet
        tracked.ownedWaitBegan(inner, on: "a sleep")
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)  // the inner one sleeps on the clock, and the outer one awaits it
        tracked.ownedWaitEnded(inner, on: "a sleep")
        tracked.checkInvariants()
        tracked.finish(inner, error: nil, now: 0)
        tracked.checkInvariants()
        // The inner one has finished, so the outer one is about to resume: not settled.
        #expect(tracked.unsettledCount == 1)
        #expect(tracked.unsettled.first?.awaiting == "a tracked task that has finished (its value is on its way)")
        tracked.endAwaiting(outer, inner)
        tracked.checkInvariants()
        tracked.finish(outer, error: nil, now: 0)
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)
    }

    /// Two children of one task await two tracked tasks' values at once: the task is settled while both awaited
    /// tasks are, and the end of one await leaves the other recorded.
    @Test func twoAwaitsAtOnceAreBothRecorded() {
        var tracked = TrackedTasks()
        let first = tracked.begin(label: "first", callSite: Self.site)
        let second = tracked.begin(label: "second", callSite: Self.site)
        let parent = tracked.begin(label: "parent", callSite: Self.site)
        for id in [first, second, parent] { tracked.markStarted(id, at: 0) }
        tracked.ownedWaitBegan(first, on: "a sleep")
        tracked.ownedWaitBegan(second, on: "a sleep")
        tracked.beginAwaiting(parent, first)
        tracked.beginAwaiting(parent, second)
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)
        // The first finishes and its await ends; the second still sleeps, and the parent still awaits it.
        tracked.ownedWaitEnded(first, on: "a sleep")
        tracked.finish(first, error: nil, now: 0)
        tracked.endAwaiting(parent, first)
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)
        #expect(tracked.isSettled(parent))
        // The second finishes: the parent is about to resume.
        tracked.ownedWaitEnded(second, on: "a sleep")
        tracked.finish(second, error: nil, now: 0)
        #expect(!tracked.isSettled(parent))
        tracked.endAwaiting(parent, second)
        tracked.finish(parent, error: nil, now: 0)
        tracked.checkInvariants()
        #expect(tracked.unfinishedCount == 0)
    }

    /// Tasks awaiting one another through `value(of:)`, `count` of them in a chain (`awaitsPerLink` awaits of the next
    /// task each, as two `async let` children awaiting one task make): the last sleeps, so all are settled.
    private static func chain(of count: Int, awaitsPerLink: Int) -> (TrackedTasks, [UInt64]) {
        var tracked = TrackedTasks()
        let ids = (0..<count).map { tracked.begin(label: "t\($0)", callSite: Self.site) }
        for id in ids { tracked.markStarted(id, at: 0) }
        for (id, next) in zip(ids, ids.dropFirst()) {
            for _ in 0..<awaitsPerLink { tracked.beginAwaiting(id, next) }
        }
        tracked.ownedWaitBegan(ids[count - 1], on: "a sleep")
        return (tracked, ids)
    }

    /// A chain of any length settles with its last task: one longer than 64 links never settled (a bound on the
    /// walk's depth; a review: the drain ran out its wait limit with `unsettledTasks`, 20 runs of 20).
    @Test func aLongChainOfAwaitsSettlesWithItsLastTask() {
        var (tracked, ids) = Self.chain(of: 500, awaitsPerLink: 1)
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)
        #expect(tracked.isSettled(ids[0]))
        tracked.ownedWaitEnded(ids[499], on: "a sleep")  // the last one wakes: every task is about to go on
        #expect(tracked.unsettledCount == 500)
        #expect(!tracked.isSettled(ids[0]))
    }

    /// A chain whose tasks each await the next twice is walked once per task: the walk took a path for each way down,
    /// 2^n of them, under the dispatcher's lock (a review: 4.5 s a drain at 20 links, 18 s at 22). Checked on a
    /// thread of its own, within a generous bound, since the old walk would not return for hours.
    @Test func aChainAwaitingEachTaskTwiceIsWalkedOnce() async {
        let counted = Locked<(unsettled: Int, headSettled: Bool)?>(nil)
        let done = DispatchSemaphore(value: 0)
        onOwnThread {
            let (tracked, ids) = Self.chain(of: 48, awaitsPerLink: 2)
            let found = (tracked.unsettledCount, tracked.isSettled(ids[0]))  // outside the lock the test reads
            counted.withLock { $0 = found }
            done.signal()
        }
        let ended = await withCheckedContinuation { continuation in
            onOwnThread { continuation.resume(returning: done.wait(timeout: .now() + .seconds(60)) == .success) }
        }
        #expect(ended, "the settled check of 48 tasks did not return within 60 s")
        #expect(counted.withLock { $0 }.map { $0.unsettled == 0 && $0.headSettled } == true)
    }

    /// Tasks that await each other never end: each is unsettled, however the walk meets them.
    @Test func tasksAwaitingEachOtherAreUnsettled() {
        var (tracked, ids) = Self.chain(of: 3, awaitsPerLink: 1)
        tracked.beginAwaiting(ids[2], ids[0])  // the last awaits the first too
        tracked.ownedWaitEnded(ids[2], on: "a sleep")
        #expect(tracked.unsettledCount == 3)
        #expect(ids.allSatisfy { !tracked.isSettled($0) })
    }

    @Test func aTaskCancelledBeforeItsStartIsForgottenWithoutCounting() {
        var tracked = TrackedTasks()
        let id = tracked.begin(label: nil, callSite: Self.site)
        tracked.checkInvariants()
        tracked.finish(id, error: CancellationError(), now: 0)
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)
        #expect(tracked.unfinishedCount == 0)
        #expect(tracked.takeUnobserved().isEmpty)
        tracked.checkInvariants()
    }

    /// The unsettled count is kept as records change: a record's own fields decide it, except a start whose body has
    /// not parked at its gate (its task's flag decides) and a task awaiting others (they decide). Parked, a task's
    /// cancellation reaches the records through its gate's handler, not through the flag.
    @Test func theUnsettledCountIsKeptAsRecordsChange() {
        var tracked = TrackedTasks()
        let first = tracked.begin(label: "first", callSite: Self.site)
        let second = tracked.begin(label: "second", callSite: Self.site)
        let task = Task<Void, Never> {}
        tracked.register(TrackedTaskKey(task), id: first)
        #expect((tracked.records.unsettled, tracked.records.undecided) == (0, 2))
        tracked.markParked(first)
        tracked.markParked(second)
        tracked.checkInvariants()
        #expect((tracked.records.unsettled, tracked.records.undecided) == (0, 0))
        task.cancel()
        #expect(tracked.unsettledCount == 0)  // its gate's handler has not reported the cancellation yet
        tracked.markStartCancelled(first)
        tracked.markStarted(second, at: 0)
        tracked.checkInvariants()
        #expect((tracked.unsettledCount, tracked.records.undecided) == (2, 0))
        tracked.beginAwaiting(second, first)
        tracked.checkInvariants()
        #expect((tracked.unsettledCount, tracked.records.undecided) == (2, 1))  // `first` runs to its end
        tracked.finish(first, error: CancellationError(), now: 0)
        tracked.checkInvariants()
        #expect((tracked.unsettledCount, tracked.records.undecided) == (1, 1))  // its value is on its way
        tracked.endAwaiting(second, first)
        tracked.ownedWaitBegan(second, on: "a sleep")
        tracked.checkInvariants()
        #expect((tracked.unsettledCount, tracked.records.unsettled, tracked.records.undecided) == (0, 0, 0))
    }

    /// A cancelled task is on its way to its end, not settled at its start: whether its start is still pending (its
    /// body will cancel it at its gate) or was cancelled with it.
    @Test func aTaskCancelledBeforeItsStartIsUnsettledUntilItEnds() {
        var tracked = TrackedTasks()
        let pending = tracked.begin(label: "pending", callSite: Self.site)
        let stopped = tracked.begin(label: "stopped", callSite: Self.site)
        let task = Task<Void, Never> {}
        tracked.register(TrackedTaskKey(task), id: pending)
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)  // both wait for their starts
        task.cancel()
        #expect(tracked.unsettledCounts == (all: 1, cancelled: 1))
        #expect(tracked.unsettledCancelled.map(\.label) == ["pending"])
        tracked.markStartCancelled(stopped)
        tracked.checkInvariants()
        #expect(tracked.unsettledCounts == (all: 2, cancelled: 2))
        #expect(
            tracked.standing(of: stopped)?.lastSeen
                == "it was cancelled before its start ran, so its start was cancelled and it is about to end with CancellationError"
        )
        tracked.finish(pending, error: CancellationError(), now: 0)
        tracked.finish(stopped, error: CancellationError(), now: 0)
        tracked.checkInvariants()
        #expect(tracked.unsettledCount == 0)
        #expect(tracked.unfinishedCount == 0)
    }

    @Test func aTaskKeyIsTheTasksIdentity() async {
        let first = Task<Int, Never> { 1 }
        let second = Task<Int, Never> { 2 }
        let copy = first
        #expect(TrackedTaskKey(first) == TrackedTaskKey(copy))
        #expect(TrackedTaskKey(first) != TrackedTaskKey(second))
        #expect(TrackedTaskKey(first).hashValue == TrackedTaskKey(copy).hashValue)

        var tracked = TrackedTasks()
        let id = tracked.begin(label: "kept", callSite: Self.site)
        do {
            // A task kept only by its key (which holds it, so no other task can take its address meanwhile).
            let task = Task<Int, Never> { 3 }
            tracked.register(TrackedTaskKey(task), id: id)
            tracked.checkInvariants()
            _ = await task.value
        }
        #expect(tracked.keys.isEmpty)  // indexed only when a key is first looked up
        #expect(tracked.id(of: TrackedTaskKey(first)) == nil)
        #expect(tracked.keys.count == 1)
        tracked.checkInvariants()
        if let kept = tracked.keys.keys.first {
            #expect(tracked.id(of: kept) == id)
        } else {
            Issue.record("the registered task's key was not indexed")
        }
        tracked.finish(id, error: nil, now: 0)
        tracked.checkInvariants()
        #expect(tracked.keys.isEmpty)
        _ = await (first.value, second.value)
    }

    /// Keys are indexed only when `value(of:)` first looks one up; until then many tasks come and go without the index,
    /// and a lookup afterwards still finds the ones that have not finished, and only those.
    @Test func keysAreIndexedOnTheFirstLookUp() async {
        var tracked = TrackedTasks()
        var live: [(key: TrackedTaskKey, id: UInt64)] = []
        var finished: [TrackedTaskKey] = []
        for index in 0..<600 {
            let task = Task<Int, Never> { index }
            let key = TrackedTaskKey(task)
            let id = tracked.begin(label: "task \(index)", callSite: Self.site)
            tracked.register(key, id: id)
            if index % 100 == 7 {
                live.append((key, id))
            } else {
                tracked.finish(id, error: nil, now: 0)
                finished.append(key)
            }
        }
        tracked.checkInvariants()
        #expect(tracked.keys.isEmpty)
        #expect(tracked.unfinishedCount == live.count)
        // The list of tasks to index drops the finished ones while nobody looks: not 600 entries.
        #expect(tracked.unindexed.count <= 64 + 2 * live.count)
        for (key, id) in live { #expect(tracked.id(of: key) == id) }
        #expect(tracked.keys.count == live.count)  // the finished tasks were never indexed
        for key in finished.prefix(50) { #expect(tracked.id(of: key) == nil) }
        tracked.checkInvariants()
        // A task that fails keeps its key until its error is claimed through it.
        let (failingKey, failingID) = live[0]
        tracked.finish(failingID, error: Failure(), now: 0)
        tracked.checkInvariants()
        tracked.claim(failingKey)
        #expect(tracked.id(of: failingKey) == nil)
        #expect(tracked.takeUnobserved().isEmpty)
        for (_, id) in live.dropFirst() { tracked.finish(id, error: nil, now: 0) }
        tracked.checkInvariants()
        #expect(tracked.keys.isEmpty && tracked.unfinishedCount == 0)
    }
}
