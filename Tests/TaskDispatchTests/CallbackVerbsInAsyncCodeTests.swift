import TaskDispatch
import TaskDispatchTesting
import Testing

/// The callback verbs stay synchronous in `async` code: the awaitable runs have other names, so an `async`
/// function that calls `background { }` or `foreground { }` resolves to the callback verb and compiles without
/// `await`. This file is the proof: it would not compile if either call needed an `await`.
@Suite struct CallbackVerbsInAsyncCodeTests {
    /// A nonisolated `async` function that dispatches with the callback verbs, keeping and dropping handles.
    func dispatchBothWays(on dispatcher: any TaskDispatcher, log: AwaitLog) async -> TaskHandle {
        dispatcher.background(label: "fire and forget") { log.record("background") }
        let handle: TaskHandle = dispatcher.foreground(label: "kept") { log.record("foreground") }
        return handle
    }

    /// The same from a `@MainActor` `async` function, with a delay and a priority.
    @MainActor func dispatchFromTheMainActor(on dispatcher: any TaskDispatcher, log: AwaitLog) async {
        dispatcher.background(priority: .utility, after: .seconds(1)) { log.record("delayed background") }
        dispatcher.foreground { log.record("main actor foreground") }
    }

    @Test func callbackVerbsCompileWithoutAwaitInAsyncFunctionsAndStillOnlyDispatch() async throws {
        let dispatcher = ManualDispatcher()
        let log = AwaitLog()

        let handle = await self.dispatchBothWays(on: dispatcher, log: log)
        await self.dispatchFromTheMainActor(on: dispatcher, log: log)

        #expect(log.events.isEmpty)  // they dispatched; nothing ran inline
        #expect(dispatcher.pendingTasks.map(\.label) == ["fire and forget", "kept", nil, nil])
        #expect(handle.cancel())
        try await dispatcher.runUntilIdle()
        #expect(log.events == ["background", "main actor foreground", "delayed background"])
    }
}
