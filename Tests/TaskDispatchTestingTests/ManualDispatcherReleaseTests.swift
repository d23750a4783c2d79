import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

/// An object whose lifetime a test watches through a weak reference.
private final class Witness: Sendable {}

/// Cancelling releases the task's closure, and what it captured, at once; huge delays never run early; a bulk of
/// one-shot tasks is not mistaken for a runaway.
@Suite struct ManualDispatcherReleaseTests {
    @Test func cancellingAnImmediateTaskReleasesWhatItCapturedAtOnce() throws {
        let dispatcher = ManualDispatcher()
        weak var watched: Witness?
        let handle: TaskHandle
        do {
            let witness = Witness()
            watched = witness
            dispatcher.background(label: "before") {}
            handle = dispatcher.background(label: "captures") { _ = witness }
            dispatcher.background(label: "after") {}
        }
        #expect(watched != nil)
        #expect(handle.cancel())
        #expect(watched == nil)  // released by cancel(), with tasks still queued before and after it
        #expect(handle.isCancelled)
        try dispatcher.runUntilIdle()
        try dispatcher.verifyIdle()
    }

    @Test func cancellingADelayedTaskReleasesWhatItCapturedAtOnce() throws {
        let dispatcher = ManualDispatcher()
        weak var watched: Witness?
        let handle: TaskHandle
        do {
            let witness = Witness()
            watched = witness
            handle = dispatcher.foreground(after: .seconds(60), label: "debounced") { _ = witness }
            dispatcher.background(after: .seconds(120)) {}
        }
        #expect(handle.cancel())
        #expect(watched == nil)
        #expect(dispatcher.pendingTaskCount == 1)
        try dispatcher.advance(by: .seconds(120))
        try dispatcher.verifyIdle()
    }

    @Test func aHandleStillAnswersAfterItsTaskIsLongGone() throws {
        let dispatcher = ManualDispatcher()
        let cancelled = dispatcher.background {}
        let ran = dispatcher.background {}
        #expect(cancelled.cancel())
        try dispatcher.runUntilIdle()
        for _ in 0..<5_000 {
            dispatcher.background {}.cancel()  // churn: the dispatcher compacts its queues meanwhile
        }
        try dispatcher.runUntilIdle()
        #expect(cancelled.isCancelled)
        #expect(!ran.isCancelled)
        #expect(!cancelled.cancel())
        #expect(!ran.cancel())
    }

    @Test func aDebounceThatCancelsAndRedispatchesKeepsOnlyTheLastModelAlive() throws {
        let dispatcher = ManualDispatcher()
        var handle: TaskHandle?
        var watched: [() -> Witness?] = []
        for _ in 0..<100 {
            let witness = Witness()
            watched.append { [weak witness] in witness }
            handle?.cancel()
            handle = dispatcher.background(after: .milliseconds(300), label: "search") { _ = witness }
        }
        #expect(watched.dropLast().allSatisfy { $0() == nil })
        #expect(watched.last?() != nil)
        #expect(dispatcher.pendingTaskCount == 1)
        try dispatcher.advance(by: .milliseconds(300))
        try dispatcher.verifyIdle()
    }

    // MARK: - The clock's range

    @Test func aDelayBeyondTheClocksRangeNeverRuns() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(after: .seconds(Int64.max), label: "someday") { log.record("someday") }
        try dispatcher.advance(by: .seconds(1_000 * 365 * 24 * 3_600))  // 1,000 years
        #expect(log.events.isEmpty)
        #expect(dispatcher.now == .nanoseconds(Int64.max - 1))
        #expect(dispatcher.pendingTasks.map(\.dueTime) == [.nanoseconds(Int64.max)])
        #expect(try dispatcher.runUntilIdle() == 0)
        #expect(log.events.isEmpty)
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error.kind == .pendingTasks)
        #expect(error.description.contains("\"someday\" at TaskDispatchTestingTests/"))
        #expect(error.description.contains(", due never"))
    }

    @Test func aDelayThatOverflowsFromALaterTimeNeverRunsEither() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        try dispatcher.advance(by: .seconds(3_600))
        dispatcher.foreground(after: .nanoseconds(Int64.max - 10), label: "overflow") { log.record("ran") }
        try dispatcher.advance(to: .nanoseconds(Int64.max))
        #expect(log.events.isEmpty)
        #expect(dispatcher.pendingTaskCount == 1)
        let step = try #require(throws: ManualDispatcherError.self) { try dispatcher.runNext() }
        #expect(
            step.summary.contains(
                "1 delayed task never falls due, the first (\"overflow\" from TaskDispatchTestingTests/")
        )
        #expect(step.summary.contains("its delay reaches past the clock's range of about 292 years"))
    }

    @Test func theLatestTimeTheClockShowsIsStillReachable() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(after: .nanoseconds(Int64.max - 1), label: "last") { log.record("last") }
        try dispatcher.runUntilIdle()
        #expect(log.events == ["last"])
        #expect(dispatcher.now == .nanoseconds(Int64.max - 1))
    }

    // MARK: - Bulk work is not a runaway

    @Test func aBulkOfOneShotTasksDrainsWithTheDefaultBound() throws {
        let dispatcher = ManualDispatcher(historyLimit: 0)
        let total = 100_000 + 50_000
        for _ in 0..<total { dispatcher.background(label: "item") {} }
        #expect(try dispatcher.runUntilIdle() == total)
        try dispatcher.verifyIdle()
    }

    @Test func theDefaultBoundStillStopsATaskThatReschedulesItself() throws {
        let dispatcher = ManualDispatcher()
        for _ in 0..<10 { dispatcher.background(label: "one-shot") {} }
        @Sendable func poll() {
            dispatcher.background(label: "poll") { poll() }
        }
        poll()
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.runUntilIdle() }
        // 11 tasks were pending at the call; the runaway limit lets 100,000 more run.
        #expect(error.kind == .runawayTasks(limit: 100_000))
        #expect(error.summary.hasPrefix("runUntilIdle() ran 100011 tasks"))
        #expect(error.summary.contains("the tasks that keep coming back are \"poll\" from TaskDispatchTestingTests/"))
        #expect(dispatcher.pendingTaskCount == 1)
        dispatcher.cancelAllPendingTasks()
    }

    // MARK: - The clock under concurrent runs

    @Test func advancesFromTwoThreadsNeverLoseTimeOrSeeItRunBackwards() async throws {
        let dispatcher = ManualDispatcher()
        let group = DispatchGroup()
        let failures = EventLog()
        for _ in 0..<2 {
            DispatchQueue.global().async(group: group) {
                for _ in 0..<500 {
                    do {
                        try dispatcher.advance(by: .milliseconds(1))
                    } catch {
                        failures.record("\(error)")
                    }
                }
            }
        }
        let finished = await withCheckedContinuation { continuation in
            group.notify(queue: .global()) { continuation.resume(returning: true) }
        }
        #expect(finished)
        #expect(failures.events.isEmpty)
        #expect(dispatcher.now == .seconds(1))
    }
}

/// Records its own release in a log.
private final class ReleaseReporter: Sendable {
    let log: EventLog

    init(_ log: EventLog) {
        self.log = log
    }

    deinit { self.log.record("released") }
}

/// Every drain lets go of a task's closure, and what it captured, once the task has run, before the next task runs:
/// as in production, where an owner released inside a callback stops what it started before the clock moves on. (A
/// probe found the first task of a drain kept until the drain returned.)
extension ManualDispatcherReleaseTests {
    enum Drain: String, CaseIterable, Sendable {
        case runCurrent, runUntilIdle, advance, runUntilLabeled, runUntilCondition
        case asyncRunUntilIdle, asyncAdvance

        var movesTheClock: Bool { self == .advance || self == .asyncAdvance }

        func callAsFunction(_ dispatcher: ManualDispatcher) async throws {
            switch self {
            case .runCurrent: try synchronously { try dispatcher.runCurrent() }
            case .runUntilIdle: try synchronously { try dispatcher.runUntilIdle() }
            case .advance: try synchronously { try dispatcher.advance(by: .seconds(2)) }
            case .runUntilLabeled: try synchronously { try dispatcher.run(untilTaskLabeled: "next") }
            case .runUntilCondition: try synchronously { try dispatcher.run { false } }
            case .asyncRunUntilIdle: try await dispatcher.runUntilIdle()
            case .asyncAdvance: try await dispatcher.advance(by: .seconds(2))
            }
        }
    }

    @Test(arguments: Drain.allCases, TaskContext.allCases)
    @MainActor
    func aDrainLetsGoOfEachClosureOnceItsTaskHasRun(drain: Drain, context: TaskContext) async throws {
        let (dispatcher, log) = Self.holderAndNext(context, delayed: drain.movesTheClock)
        do {
            try await drain(dispatcher)
        } catch let error as ManualDispatcherError where drain == .runUntilCondition {
            #expect(error.kind == .conditionNotMet)
        }
        #expect(log.events == ["released", "next ran"])
        try dispatcher.verifyIdle()
    }

    /// Off the main actor, an async drain hands each foreground task to the main queue: the same holds there.
    @Test(arguments: [Drain.asyncRunUntilIdle, .asyncAdvance])
    func anAsyncDrainOffTheMainActorLetsGoOfEachForegroundClosureOnceItRan(drain: Drain) async throws {
        let (dispatcher, log) = Self.holderAndNext(.foreground, delayed: drain.movesTheClock)
        try await drain(dispatcher)
        #expect(log.events == ["released", "next ran"])
        try dispatcher.verifyIdle()
    }

    /// Auto-drain runs the tasks a task dispatched after it returns, in one drain: each is let go of once it ran. (The
    /// task whose dispatch began the drain lives until that call returns, as the Modes article says.)
    @Test func autoDrainLetsGoOfEachClosureOnceItsTaskHasRun() throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let log = EventLog()
        dispatcher.background(label: "outer") {
            do {
                let reporter = ReleaseReporter(log)
                dispatcher.background(label: "holder") { _ = reporter }
            }
            dispatcher.background(label: "next") { log.record("next ran") }
        }
        #expect(log.events == ["released", "next ran"])
        try dispatcher.verifyIdle()
    }

    /// A dispatcher holding a task that captures an object whose release it logs, and a task after it that logs its
    /// run (due a second later when `delayed`).
    private static func holderAndNext(_ context: TaskContext, delayed: Bool) -> (ManualDispatcher, EventLog) {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        let delay: Duration = delayed ? .seconds(1) : .zero
        do {
            let reporter = ReleaseReporter(log)
            switch context {
            case .foreground:
                dispatcher.foreground(label: "holder") { _ = reporter }
                dispatcher.foreground(after: delay, label: "next") { log.record("next ran") }
            case .background:
                dispatcher.background(label: "holder") { _ = reporter }
                dispatcher.background(after: delay, label: "next") { log.record("next ran") }
            }
        }
        return (dispatcher, log)
    }
}

/// Owns a scope that polls every second, and records its own release; the release stops the polls.
private final class PollingOwner: Sendable {
    private let scope: DispatchScope
    private let reporter: ReleaseReporter

    init(_ dispatcher: ManualDispatcher, _ log: EventLog) {
        self.scope = DispatchScope(dispatcher)
        self.reporter = ReleaseReporter(log)
        self.scope.background(every: .seconds(1), label: "poll") { log.record("poll") }
    }
}

/// A tracked task lets go of its operation, and what it captured, before its end is recorded: in auto-advance that
/// record moves the clock at once, and production's `Task { }` has let go of its closure by then. (A review found
/// the owner's polls running at later virtual times before its release.)
extension ManualDispatcherReleaseTests {
    @Test(arguments: [false, true]) @MainActor
    func aTrackedTaskLetsGoOfItsOperationBeforeAutoAdvanceMovesTheClockOnItsEnd(onTheMainActor: Bool) async throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        let task: Task<Void, any Error>
        do {
            let owner = PollingOwner(dispatcher, log)
            let body: @Sendable () -> Void = { [owner] in
                dispatcher.background(after: .seconds(3), label: "later") { log.record("later ran") }
                _ = owner
            }
            task =
                onTheMainActor
                ? dispatcher.startTask(label: "holder") { @MainActor in body() }
                : dispatcher.startTask(label: "holder") { @concurrent in body() }
        }
        dispatcher.mode = .autoAdvance
        try await dispatcher.value(of: task)
        #expect(log.events.first == "released")
        try await dispatcher.runUntilIdle()
        #expect(log.events == ["released", "later ran"])
        try dispatcher.verifyIdle()
    }
}
