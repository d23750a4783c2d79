import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

/// The dispatchers' `waitLimit`, the real-time bound of a call that is expected to settle: generous, since only a
/// failing test spends it.
private let settleLimit = Duration.seconds(60)
/// The per-call bound of a call that is expected to time out: only the failing path spends it.
private let shortLimit = Duration.milliseconds(200)

private enum LoadError: Error {
    case offline
}

/// A model on the main actor whose `refresh()` starts a tracked task that loads in the background, delivers on
/// the main actor, and retries with back-off on the dispatcher's clock.
@MainActor private final class RetryingModel<Dispatcher: TaskDispatcher> {
    private(set) var items: [String] = []
    private(set) var attempts = 0
    private(set) var finished = false
    private let dispatcher: Dispatcher
    private let failures: Int

    init(dispatcher: Dispatcher, failures: Int = 0) {
        self.dispatcher = dispatcher
        self.failures = failures
    }

    @discardableResult
    func refresh() -> Task<Void, any Error> {
        self.dispatcher.startTask(label: "refresh") {
            var delay = Duration.seconds(1)
            while true {
                self.attempts += 1
                let failing = self.attempts <= self.failures
                do {
                    let items = try await self.dispatcher.runInBackground(label: "load") { () throws -> [String] in
                        if failing { throw LoadError.offline }
                        return ["a", "b", "c"]
                    }
                    try await self.dispatcher.runOnMainActor(label: "deliver") { self.items = items }
                    self.finished = true
                    return
                } catch is LoadError {
                    try await self.dispatcher.clock.sleep(for: delay)
                    delay *= 2
                }
            }
        }
    }
}

/// The async `runUntilIdle()` and `advance(by:)`: they run what is due, wait for the
/// tracked tasks to settle, and name the ones that do not. The dispatcher's invariants are checked after
/// every step.
///
/// Every `clock.sleep` here is a sleep on the dispatcher's virtual clock (a timer task that the drain runs when it
/// moves the clock), which is what these tests check; none waits in real time. The one real `Task.sleep` is the
/// foreign wait that `taskSleepIsAForeignWait` expects the drain to report; that task is cancelled, never waited
/// out.
@Suite struct ManualDispatcherSettlingTests {
    // MARK: - Driving to completion

    @Test @MainActor func aMainActorTrackedTaskIsDrivenToCompletion() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let model = RetryingModel(dispatcher: dispatcher)
        let refresh = model.refresh()
        let ran = try await dispatcher.runUntilIdle()
        // The start, "load" and "deliver": the operation's own code ran on the main actor in between.
        #expect(ran == 3)
        #expect(model.finished)
        #expect(model.items == ["a", "b", "c"])
        #expect(dispatcher.unfinishedTaskCount == 0)
        #expect(dispatcher.history.map(\.task.label) == ["refresh", "load", "deliver"])
        try await dispatcher.value(of: refresh)
        dispatcher.checkInvariants()
        try dispatcher.verifyIdle()
        dispatcher.checkInvariants()
    }

    @Test @MainActor func theSynchronousDrainStopsWhereTheAsyncOneGoesOn() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let model = RetryingModel(dispatcher: dispatcher)
        model.refresh()
        dispatcher.checkInvariants()
        // The synchronous drain runs the start, and ends before the operation (queued on the main actor, which this
        // test holds) has dispatched "load": it says so, and names the async form, instead of returning.
        let error = #expect(throws: ManualDispatcherError.self) { try synchronously { try dispatcher.runUntilIdle() } }
        dispatcher.checkInvariants()
        #expect(error?.kind == .unsettledTasks(after: .zero))
        #expect(
            error?.summary.contains("runUntilIdle() ran every due task, but 1 tracked task is still running") == true)
        #expect(error?.summary.contains("try await dispatcher.runUntilIdle()") == true)
        #expect(dispatcher.history.map(\.task.label) == ["refresh"])
        #expect(!model.finished)
        #expect(dispatcher.unsettledTaskCount == 1)
        try await dispatcher.runUntilIdle()
        dispatcher.checkInvariants()
        #expect(model.finished)
        #expect(dispatcher.unsettledTaskCount == 0)
    }

    @Test func aChainOfThreeAwaitsThroughTheExecutorIsDrainedInOrder() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let steps = StepLog()
        let task = dispatcher.startTask(label: "chain") { () async throws -> Int in
            let a = try await dispatcher.runInBackground(label: "a") {
                steps.append("a")
                return 1
            }
            let b = try await dispatcher.runInBackground(label: "b") {
                steps.append("b")
                return a + 1
            }
            return try await dispatcher.runInBackground(label: "c") {
                steps.append("c")
                return b + 1
            }
        }
        try await dispatcher.runUntilIdle()
        dispatcher.checkInvariants()
        #expect(steps.entries == ["a", "b", "c"])
        #expect(dispatcher.unfinishedTaskCount == 0)
        #expect(try await dispatcher.value(of: task) == 3)
        dispatcher.checkInvariants()
        #expect(dispatcher.history.map(\.task.label) == ["chain", "a", "b", "c"])
    }

    @Test func withNoTrackedTaskItDrainsLikeTheSynchronousDrain() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let steps = StepLog()
        dispatcher.background(after: .seconds(2), label: "later") { steps.append("later") }
        dispatcher.checkInvariants()
        dispatcher.background(label: "now") { steps.append("now") }
        dispatcher.checkInvariants()
        #expect(try await dispatcher.runUntilIdle() == 2)
        dispatcher.checkInvariants()
        #expect(steps.entries == ["now", "later"])
        #expect(dispatcher.now == .seconds(2))
        try dispatcher.verifyIdle()
        dispatcher.checkInvariants()
    }

    @Test @MainActor func awaitingTheResultWithAutoDrainNeedsNoSteps() async throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let model = RetryingModel(dispatcher: dispatcher)
        try await dispatcher.value(of: model.refresh())
        dispatcher.checkInvariants()
        #expect(model.items == ["a", "b", "c"])
        #expect(dispatcher.history.map(\.task.label) == ["refresh", "load", "deliver"])
    }

    // MARK: - The virtual clock

    /// The article's snippet: step the clock to the first retry, then run the rest until idle.
    @Test @MainActor func aRetryIsSteppedAndThenRunUntilIdle() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let model = RetryingModel(dispatcher: dispatcher, failures: 3)
        model.refresh()
        dispatcher.checkInvariants()
        try await dispatcher.settle()
        dispatcher.checkInvariants()
        #expect(model.attempts == 1)
        try await dispatcher.advance(by: .seconds(1))
        dispatcher.checkInvariants()
        #expect(model.attempts == 2)
        try await dispatcher.runUntilIdle()
        dispatcher.checkInvariants()
        #expect(model.attempts == 4)
        #expect(dispatcher.now == .seconds(7))
    }

    @Test @MainActor func theBackOffScheduleRunsOnTheVirtualClock() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let model = RetryingModel(dispatcher: dispatcher, failures: 3)
        model.refresh()
        dispatcher.checkInvariants()
        try await dispatcher.settle()
        dispatcher.checkInvariants()
        #expect(model.attempts == 1)  // failed; sleeps 1 s
        for (wait, attempt) in [(Duration.seconds(1), 2), (.seconds(2), 3), (.seconds(4), 4)] {
            try await dispatcher.advance(by: wait - .milliseconds(1))
            dispatcher.checkInvariants()
            #expect(model.attempts == attempt - 1)
            try await dispatcher.advance(by: .milliseconds(1))
            dispatcher.checkInvariants()
            #expect(model.attempts == attempt)
        }
        #expect(model.finished)
        #expect(dispatcher.now == .seconds(7))
        try dispatcher.verifyIdle()
        dispatcher.checkInvariants()
    }

    @Test @MainActor func runUntilIdleWakesEverySleepInTurn() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let model = RetryingModel(dispatcher: dispatcher, failures: 3)
        model.refresh()
        dispatcher.checkInvariants()
        try await dispatcher.runUntilIdle()
        dispatcher.checkInvariants()
        // Each sleep's timer ran only once the task had settled after the sleep before it: 1 + 2 + 4 s.
        #expect(model.finished)
        #expect(model.attempts == 4)
        #expect(dispatcher.now == .seconds(7))
    }

    @Test func aDebounceOnTheVirtualClockSearchesOnceTheTypingPauses() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let searches = StepLog()
        let search = Debouncer(dispatcher: dispatcher, pause: .milliseconds(300)) { searches.append($0) }
        search.type("s")
        dispatcher.checkInvariants()
        try await dispatcher.advance(by: .milliseconds(200))
        dispatcher.checkInvariants()
        search.type("sw")
        dispatcher.checkInvariants()
        try await dispatcher.advance(by: .milliseconds(200))
        dispatcher.checkInvariants()
        search.type("swift")
        dispatcher.checkInvariants()
        try await dispatcher.advance(by: .milliseconds(299))
        dispatcher.checkInvariants()
        #expect(searches.entries.isEmpty)
        try await dispatcher.advance(by: .milliseconds(1))
        dispatcher.checkInvariants()
        #expect(searches.entries == ["swift"])
        try dispatcher.verifyIdle()
        dispatcher.checkInvariants()
    }

    @Test func advanceMovesTheClockToItsTargetOnceEverythingHasSettled() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let wakes = StepLog()
        let task = dispatcher.startTask(label: "sleeper") {
            try await dispatcher.clock.sleep(for: .seconds(1))
            wakes.append("1 s at \(dispatcher.now)")
            try await dispatcher.clock.sleep(for: .seconds(1))
            wakes.append("2 s at \(dispatcher.now)")
        }
        try await dispatcher.advance(by: .seconds(5))
        dispatcher.checkInvariants()
        // The second sleep began at 1 s, so it woke at 2 s, before the clock moved on to the target.
        #expect(wakes.entries == ["1 s at 1.0 seconds", "2 s at 2.0 seconds"])
        #expect(dispatcher.now == .seconds(5))
        try await dispatcher.value(of: task)
        dispatcher.checkInvariants()
    }

    @Test func waitsThroughADecoratorAreStillTheDispatchersOwn() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let decorated = ForwardingDispatcher(base: dispatcher)
        let task = dispatcher.startTask(label: "decorated") { () async throws -> Int in
            let value = try await decorated.runInBackground(after: .seconds(1), label: "later") { 20 }
            try await decorated.clock.sleep(for: .seconds(2))
            return value + 1
        }
        // The delayed "later" and the sleep's timer are pending on the dispatcher underneath, recognized as
        // this task's waits there, so the clock can move to them.
        try await dispatcher.advance(by: .seconds(3))
        dispatcher.checkInvariants()
        #expect(
            dispatcher.history.map(\.task.label) == [
                "decorated", "later", "decorated: clock sleep until 3 s",
            ])
        #expect(try await dispatcher.value(of: task) == 21)
        dispatcher.checkInvariants()
    }

    // MARK: - Tasks awaiting tasks

    @Test func aTaskAwaitingAnotherThroughValueOfSettlesWithIt() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let inner = dispatcher.startTask(label: "inner") { () async throws -> Int in
            try await dispatcher.clock.sleep(for: .seconds(3))
            return 41
        }
        let outer = dispatcher.startTask(label: "outer") { try await dispatcher.value(of: inner) + 1 }
        // The outer task waits on the inner one, which sleeps on the clock: both settled, so the clock moves.
        try await dispatcher.runUntilIdle()
        dispatcher.checkInvariants()
        #expect(dispatcher.now == .seconds(3))
        #expect(try await dispatcher.value(of: outer) == 42)
        dispatcher.checkInvariants()
    }

    @Test func aTaskAwaitingAnotherTasksValueDirectlyDoesNotSettle() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let inner = dispatcher.startTask(label: "inner") { () async throws -> Int in
            try await dispatcher.clock.sleep(for: .seconds(3))
            return 41
        }
        let outer = dispatcher.startTask(label: "outer") { try await inner.value + 1 }
        // The inner task's sleep is pending before the short drain, however slow the machine: only "outer" is left.
        try await dispatcher.runNext()
        try await dispatcher.waitForPendingTasks(2)
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runUntilIdle(waitingUpTo: shortLimit)
        }
        dispatcher.checkInvariants()
        #expect(error?.kind == .unsettledTasks(after: shortLimit))
        #expect(error?.summary.contains("1 tracked task did not settle: \"outer\" started at") == true)
        #expect(
            error?.summary.contains(
                "a task's value awaited without dispatcher.value(of:), or with it, of a task this dispatcher did not start (a plain Task { })"
            ) == true)
        #expect(dispatcher.now == .zero)  // the clock waited for the outer task
        try synchronously { try dispatcher.advance(by: .seconds(3)) }  // the synchronous advance does not wait
        dispatcher.checkInvariants()
        try await dispatcher.runUntilIdle()
        dispatcher.checkInvariants()
        #expect(try await outer.value == 42)
    }

    // MARK: - What does not settle

    @Test func aForeignAwaitIsReportedAsUnsettledWithWhatTheDispatcherLastSaw() async throws {
        try await Self.reportForeignAwait()
    }

    /// Done-when scenario: a foreign await reported as unsettled with its message, 200 times.
    @Test(arguments: 0..<200) func aForeignAwaitIsReportedTheSameWayEveryTime(repetition: Int) async throws {
        try await Self.reportForeignAwait()
    }

    private static func reportForeignAwait() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let release = Gate()
        let task = dispatcher.startTask(label: "fetch") { () async throws -> Int in
            let base = try await dispatcher.runInBackground(label: "prepare") { 6 }
            return base * (await release.value())  // a wait the dispatcher does not own
        }
        // The start and "prepare" are stepped first, so that the short drain finds the task past "prepare" however
        // slow the machine.
        try await dispatcher.runNext()
        try await dispatcher.runNext()
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runUntilIdle(waitingUpTo: shortLimit)
        }
        dispatcher.checkInvariants()
        #expect(error?.kind == .unsettledTasks(after: shortLimit))
        #expect(
            error?.summary.hasPrefix(
                "runUntilIdle(waitingUpTo: 200 ms) waited 200 ms of real time, and 1 tracked task did not settle: \"fetch\" started at TaskDispatchTestingTests/ManualDispatcherSettlingTests.swift:"
            ) == true)
        #expect(
            error?.summary.contains(
                "last seen, it resumed after runInBackground \"prepare\" (TaskDispatchTestingTests/ManualDispatcherSettlingTests.swift:"
            ) == true)
        #expect(error?.summary.contains("a network call, another actor, Task.sleep") == true)
        #expect(dispatcher.unsettledTaskCount == 1)
        release.open(7)
        dispatcher.checkInvariants()
        try await dispatcher.runUntilIdle()  // the foreign wait ended: it settles now
        dispatcher.checkInvariants()
        #expect(try await dispatcher.value(of: task) == 42)
        dispatcher.checkInvariants()
        try dispatcher.verifyIdle()
        dispatcher.checkInvariants()
    }

    @Test func taskSleepIsAForeignWait() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        // A real-time sleep is the point: it is a wait the dispatcher cannot see. Nothing waits it out; the test
        // cancels it below.
        let task = dispatcher.startTask(label: "nap") { try await Task.sleep(for: .seconds(3_600)) }
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runUntilIdle(waitingUpTo: shortLimit)
        }
        dispatcher.checkInvariants()
        #expect(error?.summary.contains("\"nap\" started at") == true)
        #expect(error?.summary.contains("last seen, its start ran at 0 s and its operation began") == true)
        task.cancel()
        dispatcher.checkInvariants()
        try await dispatcher.runUntilIdle()  // runs its resumption, if it comes here
        dispatcher.checkInvariants()
        await #expect(throws: CancellationError.self) { try await dispatcher.value(of: task) }
        dispatcher.checkInvariants()
    }

    @Test func aTaskWaitingOnAnotherDispatchersWorkDoesNotSettle() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let other = ManualDispatcher(waitLimit: settleLimit)
        let task = dispatcher.startTask(label: "elsewhere") {
            try await other.runInBackground(label: "other's work") { 1 }
        }
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runUntilIdle(waitingUpTo: shortLimit)
        }
        dispatcher.checkInvariants()
        #expect(error?.kind == .unsettledTasks(after: shortLimit))
        try await other.runNextBackground()
        dispatcher.checkInvariants()
        try await dispatcher.runUntilIdle()
        dispatcher.checkInvariants()
        #expect(try await dispatcher.value(of: task) == 1)
        dispatcher.checkInvariants()
    }

    // MARK: - Errors and misuse

    /// Issue 33, item 2: the drain that sees the error leaves it claimable, and the next call reports it.
    @Test func anErrorThrownDuringTheCallIsReportedByTheNextCall() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        dispatcher.startTask(label: "doomed") {
            _ = try await dispatcher.runInBackground(label: "load") { () throws -> Int in throw LoadError.offline }
        }
        try await dispatcher.runUntilIdle()
        dispatcher.checkInvariants()
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runUntilIdle()
        }
        dispatcher.checkInvariants()
        #expect(error?.kind == .unobservedTaskError)
        #expect(error?.summary.contains("\"doomed\" started at") == true)
        #expect(error?.summary.contains("threw LoadError.offline") == true)
        try dispatcher.verifyIdle()  // reported once
        dispatcher.checkInvariants()
    }

    @Test func advanceRefusesToMoveTheClockBackwards() async throws {
        let dispatcher = ManualDispatcher()
        try await dispatcher.advance(by: .seconds(2))
        dispatcher.checkInvariants()
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.advance(to: .seconds(1))
        }
        dispatcher.checkInvariants()
        #expect(error?.kind == .clockMovedBackwards(from: .seconds(2), to: .seconds(1)))
        #expect(dispatcher.now == .seconds(2))
    }

    @Test func aTaskThatKeepsReschedulingItselfIsStoppedAtTheBound() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit, runawayLimit: 50)
        let task = dispatcher.startTask(label: "loop") {
            while !Task.isCancelled {
                _ = try await dispatcher.runInBackground(label: "again") { 1 }
            }
        }
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await dispatcher.runUntilIdle()
        }
        dispatcher.checkInvariants()
        #expect(error?.kind == .runawayTasks(limit: 50))
        task.cancel()
        dispatcher.checkInvariants()
        try await dispatcher.runUntilIdle()
        dispatcher.checkInvariants()
        await #expect(throws: CancellationError.self) { try await dispatcher.value(of: task) }
        dispatcher.checkInvariants()
    }

    @Test func cancellingTheWaitingCallThrowsCancellationError() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let release = Gate()
        let tracked = dispatcher.startTask(label: "stuck") { await release.value() }
        let (registrations, registered) = AsyncStream<Void>.makeStream()
        dispatcher.observeWaiterRegistrations { registered.yield() }
        let draining = Task { try await dispatcher.runUntilIdle() }
        var waits = registrations.makeAsyncIterator()
        await waits.next()  // it has run the start and suspended, waiting for "stuck" to settle
        draining.cancel()
        dispatcher.checkInvariants()
        await #expect(throws: CancellationError.self) { try await draining.value }
        dispatcher.checkInvariants()
        #expect(dispatcher.waiterCount == 0)
        release.open(1)
        dispatcher.checkInvariants()
        try await dispatcher.runUntilIdle()
        dispatcher.checkInvariants()
        #expect(try await dispatcher.value(of: tracked) == 1)
        dispatcher.checkInvariants()
    }
}

/// A debounce on the dispatcher's clock: each keystroke cancels the sleeping search and starts another.
private final class Debouncer: Sendable {
    private let dispatcher: ManualDispatcher
    private let pause: Duration
    private let search: @Sendable (String) -> Void
    private let current = Locked<Task<Void, any Error>?>(nil)

    init(dispatcher: ManualDispatcher, pause: Duration, search: @escaping @Sendable (String) -> Void) {
        self.dispatcher = dispatcher
        self.pause = pause
        self.search = search
    }

    func type(_ query: String) {
        let (dispatcher, pause, search) = (self.dispatcher, self.pause, self.search)
        let next = dispatcher.startTask(label: "search \(query)") {
            try await dispatcher.clock.sleep(for: pause)
            search(query)
        }
        self.current.withLock { current in
            current?.cancel()
            current = next
        }
    }
}

/// A value another thread hands over, awaited through a continuation the dispatcher does not own.
private final class Gate: Sendable {
    private let state = Locked<(value: Int?, waiting: [CheckedContinuation<Int, Never>])>((nil, []))

    func value() async -> Int {
        await withCheckedContinuation { continuation in
            let ready = self.state.withLock { state -> Int? in
                if let value = state.value { return value }
                state.waiting.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    func open(_ value: Int) {
        let waiting = self.state.withLock { state in
            state.value = value
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume(returning: value) }
    }
}

/// Entries appended from any thread, in order.
private final class StepLog: Sendable {
    private let log = Locked<[String]>([])
    func append(_ entry: String) { self.log.withLock { $0.append(entry) } }
    var entries: [String] { self.log.withLock { $0 } }
}
