import TaskDispatch
import TaskDispatchTesting
import Testing

@Test @MainActor func awaitingTheResult() async throws {
    // Await the result: every dispatch runs at once.
    let dispatcher = ManualDispatcher(mode: .autoDrain)
    let model = ItemsModel(dispatcher: dispatcher)
    try await dispatcher.value(of: model.refresh())
    #expect(model.items == ["a", "b", "c"])
}

@Test @MainActor func runningUntilIdle() async throws {
    // Run until idle: a retry with back-off of 1 s, 2 s and 4 s, tested in microseconds of real time.
    let dispatcher = ManualDispatcher()
    let model = RetryingModel(dispatcher: dispatcher, failures: 3)
    model.refresh()
    try await dispatcher.settle()
    #expect(model.attempts == 1)  // failed, asleep for 1 s on dispatcher.clock
    try await dispatcher.advance(by: .seconds(1))
    #expect(model.attempts == 2)  // the retry ran, and failed: asleep for 2 s
    try await dispatcher.runUntilIdle()
    #expect(model.attempts == 4)  // the clock jumped to each wake-up in turn
    #expect(dispatcher.now == .seconds(7))
}

@Test @MainActor func checkingTheEndState() async throws {
    // Check the end state: the same back-off, with no step and no clock move.
    let dispatcher = ManualDispatcher(mode: .autoAdvance)
    let model = RetryingModel(dispatcher: dispatcher, failures: 3)
    try await dispatcher.value(of: model.refresh())
    #expect(model.attempts == 4)
    #expect(dispatcher.now == .seconds(7))  // 1 s + 2 s + 4 s, skipped in order
}

@Test @MainActor func reloadParsesThenDelivers() async throws {
    let dispatcher = ManualDispatcher()
    let model = ArticlesModel(source: source, dispatcher: dispatcher)

    let loading = Task { await model.reload() }  // 1. start it

    try await dispatcher.runNextBackground()  // 2. "parse"
    #expect(model.state == .loading(attempt: 1))
    #expect(model.items.isEmpty)  //    parsed, not delivered

    try await dispatcher.runNextForeground()  // 3. "deliver"
    #expect(model.items.count == 3)  //    the closure ran in the step

    #expect(await loading.value == .loaded)  // 4. the rest of reload()
    try dispatcher.verifyIdle()
}

@Test @MainActor func refreshLoadsTheItems() async throws {
    let dispatcher = ManualDispatcher()
    let model = ItemsModel(dispatcher: dispatcher)

    let refresh = model.refresh()
    try await dispatcher.runNextForeground()  // the start
    try await dispatcher.runNextBackground()  // "load"
    try await dispatcher.value(of: refresh)  // the rest, and its error
    #expect(model.items == ["a", "b", "c"])
    try dispatcher.verifyIdle()
}

@Test func oneDrainRunsAChainOfAwaits() async throws {
    let dispatcher = ManualDispatcher()
    let task = dispatcher.startTask(label: "chain") {
        let a = try await dispatcher.runInBackground(label: "a") { 1 }
        let b = try await dispatcher.runInBackground(label: "b") { a + 1 }
        return try await dispatcher.runInBackground(label: "c") { b + 1 }
    }
    try await dispatcher.runUntilIdle()  // chain, a, b, c: each run once the task has settled on it
    #expect(try await dispatcher.value(of: task) == 3)
}

@Test @MainActor func theBackOffEndsInFailure() async throws {
    let dispatcher = ManualDispatcher(mode: .autoAdvance)
    let model = FeedModel(source: failingSource, dispatcher: dispatcher)

    let state = try await dispatcher.value(of: model.refresh())  // fails, retries after 1 s, 2 s, 4 s
    #expect(state == .failed(unavailable))
    #expect(model.attempts == 4)
    #expect(dispatcher.now == .seconds(7))  // 1 s + 2 s + 4 s, skipped in order
    try dispatcher.verifyIdle()
}

@Test @MainActor func autoAdvanceSkipsTheBackOff() async throws {
    let dispatcher = ManualDispatcher(mode: .autoAdvance)
    let model = FeedModel(source: offline, dispatcher: dispatcher)
    let state = try await dispatcher.value(of: model.refresh())  // fails, retries after 1 s, 2 s, then 4 s
    #expect(model.attempts == 4)
    #expect(dispatcher.now == .seconds(7))
    #expect(state == .failed(unavailable))
}
