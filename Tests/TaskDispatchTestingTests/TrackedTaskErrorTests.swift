import TaskDispatch
import TaskDispatchTesting
import Testing

private enum LoadError: Error {
    case badData
}

/// Issue 33, item 2: an error a tracked task throws during a drain stays claimable after that drain, and the next
/// call reports it if nothing claims it.
@Suite struct TrackedTaskErrorTests {
    /// The async drains, each as a test calls it.
    enum Drain: String, CaseIterable, CustomTestStringConvertible {
        case runUntilIdle, advanceBy, advanceTo, settle

        var testDescription: String { self.rawValue }

        func run(_ dispatcher: ManualDispatcher) async throws {
            switch self {
            case .runUntilIdle: try await dispatcher.runUntilIdle()
            case .advanceBy: try await dispatcher.advance(by: .seconds(1))
            case .advanceTo: try await dispatcher.advance(to: dispatcher.now + .seconds(1))
            case .settle: try await dispatcher.settle()
            }
        }
    }

    /// A tracked task that throws after a step on the dispatcher, isolated to the main actor or not.
    private static func startFailing(
        _ dispatcher: ManualDispatcher, onMainActor: Bool, line: UInt = #line
    ) -> Task<Int, any Error> {
        if onMainActor {
            return dispatcher.startTask(label: "load", line: line) { @MainActor () async throws -> Int in
                _ = try await dispatcher.runInBackground(label: "fetch") { 1 }
                throw LoadError.badData
            }
        }
        return dispatcher.startTask(label: "load", line: line) { @concurrent () async throws -> Int in
            _ = try await dispatcher.runInBackground(label: "fetch") { 1 }
            throw LoadError.badData
        }
    }

    /// The test, as written: start, drain, then check the outcome.
    @Test func theNaturalErrorPathTestPasses() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "load") { () async throws -> Int in throw LoadError.badData }
        try await dispatcher.runUntilIdle()
        await #expect(throws: LoadError.badData) { try await dispatcher.value(of: task) }
        try dispatcher.verifyIdle()
    }

    @Test(arguments: Drain.allCases, [false, true])
    func anErrorThrownDuringADrainIsClaimableAfterIt(drain: Drain, onMainActor: Bool) async throws {
        for mode in [ManualDispatcher.Mode.manual, .autoDrain, .autoAdvance] {
            // A generous limit: in the full suite on two cores, the contract checks' bursts of foreground tasks can
            // hold the main queue for longer than the default ten seconds, which this test does not measure.
            let dispatcher = ManualDispatcher(mode: mode, waitLimit: .seconds(60))
            let task = Self.startFailing(dispatcher, onMainActor: onMainActor)
            try await drain.run(dispatcher)
            await #expect(throws: LoadError.badData, "\(mode)") { try await dispatcher.value(of: task) }
            try dispatcher.verifyIdle()
        }
    }

    @Test(arguments: Drain.allCases)
    func anUnclaimedErrorIsReportedByTheNextDrainWithItsLabelAndCallSite(drain: Drain) async throws {
        let dispatcher = ManualDispatcher()
        let (task, line) = (Self.startFailing(dispatcher, onMainActor: false), #line)
        try await drain.run(dispatcher)
        dispatcher.background(label: "next") {}
        let error = await #expect(throws: ManualDispatcherError.self) { try await drain.run(dispatcher) }
        #expect(error?.kind == .unobservedTaskError)
        #expect(
            error?.summary.contains(
                "\"load\" started at TaskDispatchTestingTests/TrackedTaskErrorTests.swift:\(line) threw LoadError.badData"
            ) == true, "\(String(describing: error))")
        #expect(dispatcher.pendingTaskCount == 1)  // the refused drain ran nothing
        try await drain.run(dispatcher)  // reported once
        await #expect(throws: LoadError.badData) { try await dispatcher.value(of: task) }  // the task's own error
        try dispatcher.verifyIdle()
    }

    @Test func anUnclaimedErrorIsReportedByTheNextStep() async throws {
        let dispatcher = ManualDispatcher()
        _ = Self.startFailing(dispatcher, onMainActor: false)
        try await dispatcher.runUntilIdle()
        dispatcher.background(label: "next") {}
        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.runNextBackground() }
        #expect(error?.kind == .unobservedTaskError)
        #expect(error?.summary.hasPrefix("runNextBackground() found 1 error thrown by tracked tasks") == true)
        #expect(dispatcher.pendingTaskCount == 1)
        try await dispatcher.runNextBackground()
        try dispatcher.verifyIdle()
    }

    @Test func anUnclaimedErrorIsReportedByVerifyIdleAfterTheDrain() async throws {
        let dispatcher = ManualDispatcher()
        let line = #line + 1
        _ = Self.startFailing(dispatcher, onMainActor: true)
        try await dispatcher.runUntilIdle()
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error?.kind == .unobservedTaskError)
        #expect(
            error?.summary.hasPrefix(
                "verifyIdle() found 1 error thrown by tracked tasks that nothing awaited: \"load\" started at TaskDispatchTestingTests/TrackedTaskErrorTests.swift:\(line) threw LoadError.badData"
            ) == true, "\(String(describing: error))")
        try dispatcher.verifyIdle()  // reported once
    }

    /// One task's failure does not stop the drain: the others run to their end in it.
    @Test @MainActor func aDrainRunsTheOtherTasksToTheEndAfterOneFails() async throws {
        let dispatcher = ManualDispatcher()
        let failing = Self.startFailing(dispatcher, onMainActor: true)
        let chain = dispatcher.startTask(label: "chain") { @MainActor () async throws -> Int in
            var total = 0
            for step in 1...3 {
                total += try await dispatcher.runInBackground(label: "step \(step)") { step }
            }
            return total
        }
        try await dispatcher.runUntilIdle()
        #expect(dispatcher.unfinishedTaskCount == 0)
        await #expect(throws: LoadError.badData) { try await dispatcher.value(of: failing) }
        #expect(try await dispatcher.value(of: chain) == 6)
        try dispatcher.verifyIdle()
    }

    /// A test that ends after the drain, claiming nothing: the dispatcher's release reports the error, on standard
    /// error and to the registry that tracks it, with the task's label and call site.
    @Test func anErrorLeftByTheLastDrainIsInTheReleaseReport() async throws {
        let registry = ManualDispatcherRegistry()
        let line = #line + 3
        do {
            let dispatcher: ManualDispatcher = registry.track { ManualDispatcher() }
            _ = dispatcher.startTask(label: "load") { () async throws -> Int in throw LoadError.badData }
            try await dispatcher.runUntilIdle()
        }
        let failures = registry.idleFailures()
        #expect(failures.count == 1)
        #expect(failures.first?.wasReleased == true)
        #expect(
            failures.first?.description.contains(
                "ManualDispatcher was deinitialized: The dispatcher's release found 1 error thrown by tracked tasks that nothing awaited: \"load\" started at TaskDispatchTestingTests/TrackedTaskErrorTests.swift:\(line) threw LoadError.badData"
            ) == true, "\(failures)")
    }

    /// A step that runs the start lets the task fail on its own executor, before the drain begins or while it runs:
    /// either way the drain leaves the error claimable, so the test's outcome does not depend on the race.
    @Test func anErrorThrownAfterAStepIsClaimableAfterTheNextDrain() async throws {
        for run in 0..<200 {
            let dispatcher = ManualDispatcher()
            let task = dispatcher.startTask(label: "load") { @concurrent () async throws -> Int in
                throw LoadError.badData
            }
            try await dispatcher.runNextBackground()  // the start: the task fails at once, on the global executor
            try await dispatcher.runUntilIdle()
            await #expect(throws: LoadError.badData, "run \(run)") { try await dispatcher.value(of: task) }
            try dispatcher.verifyIdle()
        }
    }

    /// The other side of that rule: an error the test saw thrown before the first async drain (awaiting the task
    /// without claiming it) is left by that drain, and reported by the call after it.
    @Test func anErrorThrownBeforeTheFirstAsyncDrainIsReportedByTheCallAfterIt() async throws {
        let dispatcher = ManualDispatcher()
        let task = Self.startFailing(dispatcher, onMainActor: false)
        try await dispatcher.runNextBackground()  // the start
        try await dispatcher.runNextBackground()  // "fetch"
        _ = await task.result  // it has failed; nothing claimed the error
        try await dispatcher.runUntilIdle()
        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.settle() }
        #expect(error?.kind == .unobservedTaskError)
        try dispatcher.verifyIdle()
    }

    /// Done-when scenario of item 2, 1,000 times: the natural test, off and on the main actor, in each mode, with the
    /// start run by the drain or by a step before it.
    @Test func theNaturalErrorPathTestPassesAThousandTimes() async throws {
        let modes: [ManualDispatcher.Mode] = [.manual, .autoDrain, .autoAdvance]
        for run in 0..<1_000 {
            let mode = modes[run % 3]
            let onMainActor = run % 2 == 1
            let dispatcher = ManualDispatcher(mode: mode)
            let task = Self.startFailing(dispatcher, onMainActor: onMainActor)
            if mode == .manual, run % 4 < 2 {
                try await dispatcher.runNext()  // the start
            }
            try await dispatcher.runUntilIdle()
            await #expect(throws: LoadError.badData, "run \(run), \(mode)") { try await dispatcher.value(of: task) }
            try dispatcher.verifyIdle()
        }
    }
}
