import TaskDispatchTesting
import Testing

// One name for each step and drain: synchronous code gets the synchronous form, async code the async form (which
// the compiler makes it mark with `await`). That the synchronous form does not compile in async code without `await`
// is checked by `.ci/run`, which type-checks Tests/CompileChecks/SyncDrainInAsyncCode.swift against this package and
// expects exactly that error for each of the six (`runUntilIdle()`, `advance(by:)`, `advance(to:)`,
// `runNextBackground()`, `runNextForeground()`, `runNext()`).

@MainActor private final class Saver {
    private(set) var saved = false
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    @discardableResult
    func save() -> Task<Void, any Error> {
        self.dispatcher.startTask(label: "save") { @MainActor in
            try await self.dispatcher.clock.sleep(for: .seconds(1))
            try await self.dispatcher.runInBackground(label: "write") {}
            self.saved = true
        }
    }
}

@Suite struct OneNamePerStepTests {
    /// Synchronous code: `runUntilIdle()` is the synchronous drain, and runs callback work to the end.
    @Test func synchronousCodeGetsTheSynchronousDrain() throws {
        let dispatcher = ManualDispatcher()
        let log = Log()
        dispatcher.background(label: "parse") {
            log.append("parse")
            dispatcher.foreground(after: .seconds(1), label: "deliver") { log.append("deliver") }
        }
        #expect(try dispatcher.runUntilIdle() == 2)
        #expect(log.entries == ["parse", "deliver"])
        #expect(dispatcher.now == .seconds(1))
        try dispatcher.verifyIdle()
    }

    /// Async code: the same name, with `await`, is the async drain, which waits for tracked tasks to settle.
    @Test @MainActor func asyncCodeGetsTheAsyncDrain() async throws {
        let dispatcher = ManualDispatcher()
        let saver = Saver(dispatcher: dispatcher)
        saver.save()
        try await dispatcher.runUntilIdle()
        #expect(saver.saved)
        #expect(dispatcher.now == .seconds(1))
        try dispatcher.verifyIdle()
    }

    /// Auto-advance: an end-state test with no step and no clock move.
    @Test @MainActor func autoAdvanceNeedsNoDrainAtAll() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)
        let saver = Saver(dispatcher: dispatcher)
        try await dispatcher.value(of: saver.save())
        #expect(saver.saved)
        #expect(dispatcher.now == .seconds(1))
        try dispatcher.verifyIdle()
    }
}

/// `@unchecked Sendable`: a `ManualDispatcher` runs its tasks one at a time on the thread of the run method (a
/// foreground task through a synchronous hop to the main queue), so the log is never touched by two threads at once.
private final class Log: @unchecked Sendable {
    private(set) var entries: [String] = []
    func append(_ entry: String) { self.entries.append(entry) }
}
