import TaskDispatch
import TaskDispatchTesting
import Testing

@Test func aDelayedTaskRunsWhenTheClockReachesIt() throws {
    let refreshCount = Counter()
    let dispatcher = ManualDispatcher()
    dispatcher.background(after: .seconds(2), label: "refresh") { refreshCount.add(1) }

    try dispatcher.advance(by: .seconds(1))
    #expect(refreshCount.value == 0)  // due at 2 s, the clock says 1 s
    #expect(dispatcher.pendingTasks.map(\.dueTime) == [.seconds(2)])

    try dispatcher.advance(by: .seconds(1))
    #expect(refreshCount.value == 1)
    #expect(dispatcher.now == .seconds(2))
}

@Test func aCancelledTimeoutNeverRuns() throws {
    let dispatcher = ManualDispatcher()
    let timedOut = Flag()
    let handle = dispatcher.background(after: .seconds(5), label: "timeout") { timedOut.set(true) }
    #expect(dispatcher.pendingTaskCount == 1)

    #expect(handle.cancel())  // stopped it
    #expect(handle.isCancelled)
    #expect(dispatcher.pendingTaskCount == 0)

    try dispatcher.advance(by: .seconds(10))
    #expect(!timedOut.value)  // never ran
    #expect(!handle.cancel())  // nothing left to cancel
}

@Test func limitsAreSetOnceWhenTheDispatcherIsMade() {
    let dispatcher = ManualDispatcher(waitLimit: .seconds(30))  // a slow CI machine
    let bulk = ManualDispatcher(runawayLimit: 2_000_000)  // a drain that really runs that many
    #expect(dispatcher.waitLimit == .seconds(30))
    #expect(bulk.runawayLimit == 2_000_000)
    // Left out, the wait limit is the process's default: 10 s unless TASKDISPATCH_WAIT_LIMIT sets it.
    #expect(bulk.waitLimit == ManualDispatcher.defaultWaitLimit)
    #expect(ManualDispatcher.defaultWaitLimit > .zero)
}
