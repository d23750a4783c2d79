import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

// Every `clock.sleep` in this file sleeps on the dispatcher's virtual clock, which is what these tests check: a
// sleeper wakes only when the test moves that clock with `advance`, never after real time passes.

/// The dispatchers' `waitLimit`, the real-time bound on waiting for a sleeping task to dispatch its timer: generous,
/// since only a failing test spends it.
private let waitLimit = Duration.seconds(60)

@Suite struct ManualDispatcherClockTests {
    @Test func theClockReadsTheDispatcherTime() throws {
        let dispatcher = ManualDispatcher()
        let clock = dispatcher.clock
        let start = clock.now
        #expect(start.offset == .zero)
        try dispatcher.advance(by: .milliseconds(1_500))
        #expect(clock.now.offset == .milliseconds(1_500))
        #expect(start.duration(to: clock.now) == .milliseconds(1_500))
        #expect(start.advanced(by: .milliseconds(1_500)) == clock.now)
        #expect(start < clock.now)
        #expect("\(clock.now)" == "1.5 s")
        #expect(clock.minimumResolution == .nanoseconds(1))
    }

    @Test func aSleepWaitsForTheClockToReachItsDeadline() async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let clock = dispatcher.clock
        let sleeper = Task { try await clock.sleep(for: .seconds(1)) }
        try await dispatcher.waitForPendingTasks(1, in: .background)
        #expect(dispatcher.pendingTasks.map(\.label) == ["clock sleep until 1 s"])
        #expect(try await dispatcher.advance(by: .milliseconds(999)) == 0)
        #expect(dispatcher.pendingTaskCount == 1)
        #expect(try await dispatcher.advance(by: .milliseconds(1)) == 1)
        try await sleeper.value
        #expect(dispatcher.history.map(\.startTime) == [.seconds(1)])
        try dispatcher.verifyIdle()
    }

    @Test func advanceWakesSleepersByDueTimeThenDispatchOrderAmongDelayedClosures() async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let clock = dispatcher.clock
        let first = Task { try await clock.sleep(until: .init(offset: .seconds(2))) }
        try await dispatcher.waitForPendingTasks(1)
        dispatcher.background(after: .seconds(3), label: "three") {}
        dispatcher.background(after: .seconds(2), label: "two") {}
        dispatcher.background(after: .seconds(1), label: "one") {}
        let second = Task { try await clock.sleep(until: .init(offset: .seconds(2))) }
        try await dispatcher.waitForPendingTasks(5)

        #expect(try await dispatcher.advance(by: .seconds(3)) == 5)
        try await first.value
        try await second.value
        let runs = dispatcher.history.map { "\($0.task.label ?? "-")@\($0.startTime)" }
        #expect(
            runs == [
                "one@1.0 seconds", "clock sleep until 2 s@2.0 seconds", "two@2.0 seconds",
                "clock sleep until 2 s@2.0 seconds", "three@3.0 seconds",
            ]
        )
        // The first sleeper's timer was dispatched before "two", the second's after it.
        let sequences = dispatcher.history.filter { $0.task.label == "clock sleep until 2 s" }.map(\.task.sequence)
        #expect(sequences == [1, 5])
    }

    @Test func cancellingASleepingTaskCancelsItsTimerAndThrowsCancellationError() async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let clock = dispatcher.clock
        let sleeper = Task { try await clock.sleep(for: .seconds(1)) }
        try await dispatcher.waitForPendingTasks(1)
        sleeper.cancel()
        #expect(dispatcher.pendingTaskCount == 0)  // the cancellation handler cancelled the timer synchronously
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(try await dispatcher.advance(by: .seconds(1)) == 0)
        #expect(dispatcher.history.isEmpty)
        try dispatcher.verifyIdle()
    }

    @Test func aSleepInACancelledTaskThrowsAndDispatchesNothing() async throws {
        let dispatcher = ManualDispatcher()
        let clock = dispatcher.clock
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(1))
        }
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(dispatcher.pendingTaskCount == 0)
        #expect(dispatcher.history.isEmpty)
    }

    @Test func aDeadlineAlreadyReachedReturnsAtOnce() async throws {
        let dispatcher = ManualDispatcher()
        try await dispatcher.advance(by: .seconds(5))
        try await dispatcher.clock.sleep(until: .init(offset: .seconds(5)))
        try await dispatcher.clock.sleep(for: .zero)
        try await dispatcher.clock.sleep(for: .seconds(-1))
        #expect(dispatcher.pendingTaskCount == 0)
        #expect(dispatcher.history.isEmpty)
    }

    @Test func aSleepingTaskIsPendingWorkThatVerifyIdleReports() async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let clock = dispatcher.clock
        let sleeper = Task { try await clock.sleep(for: .seconds(5)) }
        try await dispatcher.waitForPendingTasks(1)
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error.kind == .pendingTasks)
        #expect(error.description.contains("\"clock sleep until 5 s\""))
        #expect(error.description.contains("ManualDispatcher.Clock.swift"))
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        try dispatcher.verifyIdle()
    }

    @Test func aSleepBeyondTheClockRangeNeverFallsDue() async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let clock = dispatcher.clock
        let sleeper = Task { try await clock.sleep(for: .seconds(Int64.max)) }
        try await dispatcher.waitForPendingTasks(1)
        #expect(dispatcher.pendingTasks.map(\.label) == ["clock sleep until never"])
        try await dispatcher.advance(to: .seconds(Int64.max))
        #expect(dispatcher.pendingTaskCount == 1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }

    @Test func autoDrainStillHoldsASleepUntilTheClockMoves() async throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain, waitLimit: waitLimit)
        let clock = dispatcher.clock
        let sleeper = Task { try await clock.sleep(for: .seconds(1)) }
        try await dispatcher.waitForPendingTasks(1)
        #expect(try await dispatcher.advance(by: .seconds(1)) == 1)
        try await sleeper.value
    }

    @Test func codeHoldingAnyTaskDispatcherSleepsOnTheVirtualClock() async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let erased: any TaskDispatcher = dispatcher
        let sleeper = Task { try await erased.clock.sleep(for: .seconds(1)) }
        try await dispatcher.waitForPendingTasks(1)
        #expect(erased.clock is ManualDispatcher.Clock)
        try await dispatcher.advance(by: .seconds(1))
        try await sleeper.value
    }

    @Test func aSleepInATrackedTaskCarriesTheTaskLabelAndStartLine() async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let line: UInt = #line + 1
        let sleeper = dispatcher.startTask(label: "timer") { try await dispatcher.clock.sleep(for: .seconds(1)) }
        try await dispatcher.settle()  // the start, up to the sleep
        let timer = try #require(dispatcher.pendingTasks.first)
        #expect(timer.label == "timer: clock sleep until 1 s")
        #expect(timer.callSite == CallSite(fileID: #fileID, line: line))
        try await dispatcher.advance(by: .seconds(1))
        try await dispatcher.value(of: sleeper)
        try dispatcher.verifyIdle()
    }

    /// A timer loop that is never stopped: the runaway check names its tracked task and start line, once.
    @Test func aRunawayTimerLoopIsNamedByItsTrackedTask() async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit, runawayLimit: 99)  // the start, plus 99
        let line: UInt = #line + 1
        let timer = dispatcher.startTask(label: "timer") {
            while true { try await dispatcher.clock.sleep(for: .seconds(1)) }
        }
        let error = try await #require(throws: ManualDispatcherError.self) {
            try await dispatcher.runUntilIdle()
        }
        #expect(error.kind == .runawayTasks(limit: 99))
        let site = "TaskDispatchTestingTests/ManualDispatcherClockTests.swift:\(line)"
        #expect(error.summary.contains("the tasks that keep coming back are \"timer\" … \"timer: clock sleep until "))
        #expect(error.summary.ranges(of: site).count == 1)  // one entry, not one per deadline
        #expect(!error.summary.contains("ManualDispatcher.Clock.swift"))
        timer.cancel()
        try await dispatcher.runUntilIdle()
        await #expect(throws: CancellationError.self) { try await dispatcher.value(of: timer) }
    }

    @Test func productionDispatchersUseTheContinuousClock() {
        let queue: any TaskDispatcher = QueueDispatcher()
        let operations: any TaskDispatcher = OperationQueueDispatcher()
        #expect(queue.clock is ContinuousClock)
        #expect(operations.clock is ContinuousClock)
    }

    /// Done-when scenario: a sleep-based debounce tested on the virtual clock, 200 times in parallel.
    @Test(arguments: 0..<200) func aDebounceOnTheVirtualClockDeliversOnlyTheLastInput(repetition: Int) async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let debouncer = Debouncer(dispatcher: dispatcher, interval: .milliseconds(300))

        let first = debouncer.submit("sw")
        try await dispatcher.waitForPendingTasks(1)
        try await dispatcher.advance(by: .milliseconds(200))
        let second = debouncer.submit("swift")  // cancels the first sleep and its timer
        await #expect(throws: CancellationError.self) { try await first.value }
        try await dispatcher.waitForPendingTasks(1)
        #expect(try await dispatcher.advance(by: .milliseconds(299)) == 0)
        #expect(try await dispatcher.advance(by: .milliseconds(1)) == 1)
        try await second.value
        #expect(debouncer.delivered == ["swift"])
        #expect(dispatcher.now == .milliseconds(500))
        try dispatcher.verifyIdle()
    }
}

/// Delivers a value once no newer one has come for `interval`, sleeping on the dispatcher's clock.
private final class Debouncer: @unchecked Sendable {
    // @unchecked Sendable: `pending` and `values` are touched only with `lock` held.
    private let lock = NSLock()
    private let dispatcher: any TaskDispatcher
    private let interval: Duration
    private var pending: Task<Void, any Error>?
    private var values: [String] = []

    init(dispatcher: any TaskDispatcher, interval: Duration) {
        self.dispatcher = dispatcher
        self.interval = interval
    }

    var delivered: [String] {
        self.lock.withLock { self.values }
    }

    @discardableResult
    func submit(_ value: String) -> Task<Void, any Error> {
        let clock = self.dispatcher.clock
        let interval = self.interval
        let task = Task {
            try await clock.sleep(for: interval)
            self.lock.withLock { self.values.append(value) }
        }
        let previous = self.lock.withLock {
            defer { self.pending = task }
            return self.pending
        }
        previous?.cancel()
        return task
    }
}
