import TaskDispatch
import TaskDispatchTesting
import Testing

@Suite struct ManualDispatcherCancellationTests {
    @Test func aTaskCancelledBeforeItsTurnNeverRuns() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        let handle = dispatcher.background(label: "doomed") { log.record("doomed") }
        dispatcher.background(label: "kept") { log.record("kept") }
        #expect(!handle.isCancelled)
        #expect(handle.cancel())
        #expect(handle.isCancelled)
        #expect(!handle.cancel())  // already cancelled
        #expect(dispatcher.pendingTaskCount == 1)
        #expect(dispatcher.pendingTasks.map(\.label) == ["kept"])
        #expect(try dispatcher.runUntilIdle() == 1)
        #expect(log.events == ["kept"])
        try dispatcher.verifyIdle()
    }

    @Test func cancellingAfterTheRunDoesNothing() throws {
        let dispatcher = ManualDispatcher()
        let handle = dispatcher.foreground {}
        try dispatcher.runNextForeground()
        #expect(!handle.cancel())
        #expect(!handle.isCancelled)
    }

    @Test func aTaskCancelledDuringTheDrainOfAnotherNeverRuns() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        let victim = HandleBox()
        dispatcher.background(label: "canceller") {
            log.record("canceller")
            log.record(victim.handle?.cancel() == true ? "cancelled" : "too late")
        }
        victim.handle = dispatcher.background(label: "victim") { log.record("victim") }
        dispatcher.background(label: "bystander") { log.record("bystander") }
        try dispatcher.runUntilIdle()
        #expect(log.events == ["canceller", "cancelled", "bystander"])
    }

    @Test func cancelledDelayedTasksLeaveTheCountsAndTheClockAlone() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        let debounced = dispatcher.background(after: .milliseconds(300), label: "search") { log.record("old") }
        #expect(dispatcher.pendingTaskCount(in: .background) == 1)
        debounced.cancel()
        #expect(dispatcher.pendingTaskCount(in: .background) == 0)
        dispatcher.background(after: .milliseconds(300), label: "search") { log.record("new") }
        try dispatcher.runUntilIdle()
        #expect(log.events == ["new"])
        #expect(dispatcher.now == .milliseconds(300))
    }

    @Test func aCancelledTaskAtTheFrontDoesNotBlockTheQueue() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        let handles = (0..<5).map { index in dispatcher.foreground(label: "f\(index)") { log.record("f\(index)") } }
        handles[0].cancel()
        handles[2].cancel()
        #expect(try dispatcher.runNextForeground().task.label == "f1")
        #expect(try dispatcher.runNextForeground().task.label == "f3")
        #expect(try dispatcher.runNextForeground().task.label == "f4")
        #expect(throws: ManualDispatcherError.self) { try dispatcher.runNextForeground() }
        #expect(log.events == ["f1", "f3", "f4"])
    }

    @Test func cancelRacingADrainOnAnotherThreadIsAllOrNothing() throws {
        for _ in 0..<200 {
            let dispatcher = ManualDispatcher()
            let started = EventCounter(size: 1)
            let finished = EventCounter(size: 1)
            let handle = dispatcher.background {
                started.increment(0)
                finished.increment(0)
            }
            // A Dispatch thread, not the cooperative pool: other tests block pool threads.
            let drained = BackgroundCall { try dispatcher.runUntilIdle() }
            let cancelled = handle.cancel()
            let ran = try drained.value()
            #expect(started.values == finished.values)
            #expect(cancelled == (started.values[0] == 0))
            #expect(ran == (cancelled ? 0 : 1))
        }
    }
}

/// Holds a handle set after the closure that uses it was created. `@unchecked Sendable`: set once, before any
/// task that reads it runs (the dispatcher runs nothing until the test asks).
final class HandleBox: @unchecked Sendable {
    var handle: TaskHandle?
}
