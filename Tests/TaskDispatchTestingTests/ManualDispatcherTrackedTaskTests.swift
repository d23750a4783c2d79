import TaskDispatch
import TaskDispatchTesting
import Testing

/// The dispatchers' `waitLimit`, the real-time bound on the waiting steps: generous, only a failing test spends it.
private let waitLimit = Duration.seconds(60)

private enum LoadError: Error {
    case offline
}

/// A model whose `refresh()` starts a tracked task, as production code would start a `Task`.
@MainActor private final class ItemsModel {
    private(set) var items: [String] = []
    private let dispatcher: any TaskDispatcher
    private let fails: Bool

    init(dispatcher: any TaskDispatcher, fails: Bool = false) {
        self.dispatcher = dispatcher
        self.fails = fails
    }

    @discardableResult
    func refresh() -> Task<Void, any Error> {
        let fails = self.fails
        return self.dispatcher.startTask(label: "refresh") {
            let items = try await self.dispatcher.runInBackground(label: "load") { () throws -> [String] in
                if fails { throw LoadError.offline }
                return ["a", "b", "c"]
            }
            self.items = items  // on the main actor: the closure inherits the model's isolation
        }
    }
}

@Suite struct ManualDispatcherTrackedTaskTests {
    @Test func aNonisolatedTaskStartsThroughAPendingBackgroundTask() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "compute") { 6 * 7 }
        #expect(dispatcher.pendingTaskCount(in: .foreground) == 0)
        #expect(dispatcher.unfinishedTaskCount == 1)
        let start = try #require(dispatcher.pendingTasks.first)
        #expect(start.label == "compute")
        #expect(start.callSite.line == 39)
        // Only the start: the task runs on the global executor, not on the dispatcher's task executor (a held job
        // would hold every actor the task enters).
        #expect(dispatcher.pendingTasks.map(\.label) == ["compute"])
        try await dispatcher.runUntilIdle()
        #expect(try await dispatcher.value(of: task) == 42)
        #expect(dispatcher.unfinishedTaskCount == 0)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func aMainActorTaskStartsThroughAPendingForegroundTask() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "show") { () -> Bool in
            MainActor.assertIsolated()
            return true
        }
        #expect(dispatcher.pendingTaskCount(in: .foreground) == 1)
        #expect(dispatcher.pendingTaskCount(in: .background) == 0)
        try await dispatcher.runNextForeground()
        #expect(try await dispatcher.value(of: task))
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func theOperationWaitsForItsStart() async throws {
        let dispatcher = ManualDispatcher()
        let model = ItemsModel(dispatcher: dispatcher)
        model.refresh()
        // Nothing but the start is pending: the operation has not begun, so "load" was never dispatched.
        #expect(dispatcher.pendingTasks.map(\.label) == ["refresh"])
        #expect(dispatcher.unfinishedTaskCount == 1)
        // Let it finish: its pending start holds the model, which holds the dispatcher.
        try await dispatcher.runUntilIdle()
        try dispatcher.verifyIdle()
    }

    @Test func cancellingATaskBeforeItsOperationBeginsMeansItNeverRuns() async throws {
        let dispatcher = ManualDispatcher()
        let ran = RunCounter()
        let task = dispatcher.startTask(label: "never") { ran.increment() }
        task.cancel()
        try await dispatcher.runUntilIdle()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(dispatcher.pendingTaskCount == 0)
        #expect(ran.value == 0)
        #expect(dispatcher.unfinishedTaskCount == 0)
        try dispatcher.verifyIdle()  // a cancellation is not an error to report
    }

    @Test func anErrorNobodyAwaitedIsReportedOnceByVerifyIdleWithItsLabelAndCallSite() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "sync") { throw LoadError.offline }
        try await dispatcher.runNext()  // the start
        _ = await task.result  // waits for the end without claiming the error
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error.kind == .unobservedTaskError)
        #expect(
            error.summary.contains(
                "\"sync\" started at TaskDispatchTestingTests/ManualDispatcherTrackedTaskTests.swift:"))
        #expect(error.summary.contains("threw LoadError.offline"))
        #expect(error.summary.hasPrefix("verifyIdle() found 1 error thrown by tracked tasks that nothing awaited"))
        try dispatcher.verifyIdle()  // reported once
    }

    @Test func anErrorNobodyAwaitedIsReportedByTheNextRunMethod() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "sync") { throw LoadError.offline }
        try await dispatcher.runNext()  // the start
        _ = await task.result
        dispatcher.background(label: "next") {}
        let error = try #require(throws: ManualDispatcherError.self) {
            try synchronously { try dispatcher.runUntilIdle() }
        }
        #expect(error.kind == .unobservedTaskError)
        #expect(error.summary.hasPrefix("runUntilIdle() found 1 error"))
        #expect(dispatcher.pendingTaskCount == 1)  // the refused run ran nothing
        #expect(try await dispatcher.runUntilIdle() == 1)
    }

    @Test func anErrorAwaitedThroughValueOfIsClaimed() async throws {
        let dispatcher = ManualDispatcher()
        let before = dispatcher.startTask(label: "claimed before") { throw LoadError.offline }
        let after = dispatcher.startTask(label: "claimed after") { throw LoadError.offline }
        try await dispatcher.runNext()  // the first start
        // Claimed before the next run checks for errors (which would otherwise race the task's throw).
        await #expect(throws: LoadError.self) { try await dispatcher.value(of: before) }
        try await dispatcher.runNext()
        _ = await after.result
        await #expect(throws: LoadError.self) { try await dispatcher.value(of: after) }
        try dispatcher.verifyIdle()
    }

    @Test func aCancellationErrorThrownByTheOperationIsNotReported() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "stops") { throw CancellationError() }
        try await dispatcher.runUntilIdle()
        _ = await task.result
        try dispatcher.verifyIdle()
    }

    @Test func productionDispatchersStartAPlainTask() async throws {
        let dispatcher: any TaskDispatcher = QueueDispatcher()
        let task = dispatcher.startTask(label: "plain") { 7 }
        #expect(try await task.value == 7)
    }

    /// Done-when scenario: a model with `refresh() { dispatcher.startTask { … } }` tested to completion, 200 times.
    @Test(arguments: 0..<200) @MainActor func aModelsRefreshIsTestedToCompletion(repetition: Int) async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let model = ItemsModel(dispatcher: dispatcher)
        let refresh = model.refresh()
        try await dispatcher.runNextForeground()  // the start
        let load = try await dispatcher.runNextBackground()
        #expect(load.task.label == "load")
        try await dispatcher.value(of: refresh)
        #expect(model.items == ["a", "b", "c"])
        #expect(dispatcher.unfinishedTaskCount == 0)
        try dispatcher.verifyIdle()
    }

    /// Done-when scenario: an unawaited thrown error reported with its call site, 200 times.
    @Test(arguments: 0..<200) @MainActor func anUnawaitedErrorIsReportedWithItsCallSite(repetition: Int) async throws {
        let dispatcher = ManualDispatcher(waitLimit: waitLimit)
        let model = ItemsModel(dispatcher: dispatcher, fails: true)
        let refresh = model.refresh()
        try await dispatcher.runNextForeground()
        try await dispatcher.runNextBackground()
        _ = await refresh.result
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error.kind == .unobservedTaskError)
        #expect(
            error.summary.contains(
                "\"refresh\" started at TaskDispatchTestingTests/ManualDispatcherTrackedTaskTests.swift:26 threw LoadError.offline"
            ))
        #expect(model.items.isEmpty)
    }
}

/// Counts calls from any thread.
private final class RunCounter: Sendable {
    private let count = Locked(0)
    func increment() { self.count.withLock { $0 += 1 } }
    var value: Int { self.count.withLock { $0 } }
}

/// An async run method called from inside one of the dispatcher's own tracked tasks would wait for that task to
/// settle: it is refused at once, naming the task, where it used to wait out its limit and blame something foreign.
@Suite struct RunFromTrackedTaskTests {
    @Test(arguments: ["runUntilIdle()", "advance(by: 1 s)", "settle()", "runNext()"])
    func anAsyncRunMethodInsideATrackedTaskIsRefusedAtOnce(method: String) async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
        let task = dispatcher.startTask(label: "runs tasks") { () async throws -> Void in
            switch method {
            case "runUntilIdle()": try await dispatcher.runUntilIdle()
            case "advance(by: 1 s)": try await dispatcher.advance(by: .seconds(1))
            case "settle()": try await dispatcher.settle()
            default: try await dispatcher.runNext()
            }
        }
        try await dispatcher.runNext()  // its start
        let started = ContinuousClock.now
        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: task) }
        #expect(error?.kind == .reentrantRun)
        #expect(error?.description.contains("\(method) was called from inside tracked task \"runs tasks\"") == true)
        #expect(ContinuousClock.now - started < .seconds(30), "refused at once, not after the 60 s limit")
        try await dispatcher.runUntilIdle()
        try dispatcher.verifyIdle()
    }
}

/// `run(untilTaskLabeled:)` and `run(until:)` run out of tasks while a tracked task still runs on its own: the
/// error names that task, which may dispatch the labeled task later, instead of only blaming the label.
@Suite struct RunUntilWithRunningTrackedTaskTests {
    private final class Resumption: @unchecked Sendable {
        private let lock = Locked<CheckedContinuation<Void, Never>?>(nil)
        func park(_ continuation: CheckedContinuation<Void, Never>) { self.lock.withLock { $0 = continuation } }
        func resume() { self.lock.withLock { $0.take() }?.resume() }
    }

    @Test(arguments: [true, false])
    func theErrorNamesTheTrackedTaskStillRunning(byLabel: Bool) async throws {
        let dispatcher = ManualDispatcher()
        let resumption = Resumption()
        let (parked, parking) = AsyncStream<Void>.makeStream()
        let task = dispatcher.startTask(label: "load") { () async throws -> Void in
            // Something the dispatcher does not control, which the test resumes below.
            await withCheckedContinuation { continuation in
                resumption.park(continuation)
                parking.yield()
            }
            dispatcher.foreground(label: "deliver") {}
        }
        try await dispatcher.runNext()  // its start
        for await _ in parked { break }
        let error = #expect(throws: ManualDispatcherError.self) {
            if byLabel {
                try dispatcher.run(untilTaskLabeled: "deliver")
            } else {
                try dispatcher.run(until: { false })
            }
        }
        #expect(error?.kind == .conditionNotMet)
        #expect(error?.description.contains("1 tracked task is still running on its own executor") == true)
        #expect(error?.description.contains("\"load\"") == true)
        #expect(error?.description.contains("From async code, step with try await dispatcher.runNext()") == true)
        resumption.resume()
        try await dispatcher.value(of: task)
        try await dispatcher.runUntilIdle()
        try dispatcher.verifyIdle()
    }

    /// What that error advises, from async code: step with the async `runNext()`, which waits for a tracked task to
    /// dispatch its next task, and check the label after each step; every time, whatever the threads do.
    @Test func asyncCodeStepsToALabelThroughATrackedChain() async throws {
        for _ in 0..<50 {
            let dispatcher = ManualDispatcher()
            let chain = dispatcher.startTask(label: "chain") { () async throws -> Int in
                let first = try await dispatcher.runInBackground(label: "a") { 1 }
                return try await dispatcher.runInBackground(label: "b") { first + 1 }
            }
            var steps = 0
            while dispatcher.history.last?.task.label != "b" {
                try await dispatcher.runNext()
                steps += 1
            }
            #expect(steps == 3)  // the start, "a", "b"
            #expect(try await dispatcher.value(of: chain) == 2)
            try dispatcher.verifyIdle()
        }
    }
}
